import { testCipher } from '../../testing/test-cipher.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ForkdError, SandboxInfo } from '@forkd/protocol';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { ApiKeys } from '../auth/api-keys.js';
import { ownerView } from '../http/caller-view.js';
import type { NodeService } from '../../node-contract/index.js';
import { TenantQuotas } from './tenant-quotas.js';
import { sandboxInfo } from '../../testing/sandbox-info.js';

const box = (id: string, state: SandboxInfo['state']): SandboxInfo => sandboxInfo(id, { state });

test('a port-proxy call that would wake a paused sandbox is held to its owner\'s limits; an unowned one to none', async () => {
  const boxes = new Map([box('sbx-run', 'running'), box('sbx-paused', 'paused'), box('sbx-nobody', 'paused')].map((b) => [b.id, b]));
  let woken = 0;
  const svc = {
    get: async (id: string) => boxes.get(id)!,
    list: async () => [...boxes.values()],
    timeline: async () => [],
    connectPort: async () => {
      woken++;
      return {} as never;
    },
  } as unknown as NodeService;
  const store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
  await store.setOwner('sandbox', 'sbx-run', 'acme');
  await store.setOwner('sandbox', 'sbx-paused', 'acme');
  await store.setTenantLimits('acme', { runningSandboxes: 1 });
  await (await ownerView(svc, control, 'sbx-run')).connectPort('sbx-run', 80);
  await assert.rejects((await ownerView(svc, control, 'sbx-paused')).connectPort('sbx-paused', 80), (e: ForkdError) => e.code === 'RESOURCE_EXHAUSTED' && e.details?.limit === 'runningSandboxes');
  await (await ownerView(svc, control, 'sbx-nobody')).connectPort('sbx-nobody', 80);
  assert.equal(woken, 2);
  await store.close();
});
