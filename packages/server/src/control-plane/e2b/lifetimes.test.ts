import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { SandboxInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/node-service.js';
import { silentLogger } from '../../shared/logger.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { Lifetimes } from './lifetimes.js';

test('two replicas timing out one sandbox at once: one pauses it, the other finds the lease taken or the sandbox paused', async () => {
  const store = new SqliteControlStore(':memory:');
  let state: SandboxInfo['state'] = 'running';
  const pauses: string[] = [];
  const info = () => ({ id: 'sbx-1', state, expiresAt: new Date(Date.now() + 30).toISOString(), onTimeout: 'pause' }) as unknown as SandboxInfo;
  const svc = (who: string) => ({
    get: async () => {
      await sleep(5);
      return { ...info(), expiresAt: new Date(Date.now() - 1).toISOString() };
    },
    pause: async () => {
      pauses.push(who);
      await sleep(5);
      state = 'paused';
      return info();
    },
  }) as unknown as NodeService;
  const replicas = ['a', 'b'].map((h) => new Lifetimes(svc(h), silentLogger, () => {}, { leases: store, holder: h }));
  try {
    const s = info();
    for (const l of replicas) l.schedule(s);
    await sleep(150);
    assert.equal(pauses.length, 1, `paused by ${pauses.join(', ')}`);
    assert.equal(await store.tryLease('e2b-lifetime:sbx-1', 'c', 1000), true, 'the lease was released once done');
  } finally {
    for (const l of replicas) l.close();
    await store.close();
  }
});
