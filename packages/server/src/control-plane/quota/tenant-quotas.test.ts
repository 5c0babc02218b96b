import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { TenantQuotas, type TenantHoldings } from './tenant-quotas.js';
import { newSandboxDemand, UNLIMITED } from './tenant-usage.js';

const limits = { memoryMb: 512, cpus: 1, pids: 1024 };
const box = (id: string, state: SandboxInfo['state'] = 'running') => ({ id, state, limits });

test('the last slot goes to one of two calls in flight; a bound sandbox counts once; a release frees its slot', () => {
  const store = new SqliteControlStore(':memory:');
  const q = new TenantQuotas(store, { ...UNLIMITED, runningSandboxes: 5 });
  store.setTenantLimits('acme', { runningSandboxes: 2 });
  const held: TenantHoldings = { sandboxes: [box('sbx-1')], snapshots: 0 };
  const first = q.admit('acme', newSandboxDemand(limits), () => held);
  // The first create is still starting: the second call for the same (last) slot is refused.
  assert.throws(() => q.admit('acme', newSandboxDemand(limits), () => held), (e: ForkdError) => e.code === 'RESOURCE_EXHAUSTED' && e.details?.limit === 'runningSandboxes');
  // Its record appears (bound): still counted once.
  first.bind('sbx-2');
  const recorded: TenantHoldings = { sandboxes: [box('sbx-1'), box('sbx-2', 'creating')], snapshots: 0 };
  assert.equal(q.usage('acme', recorded).runningSandboxes, 2);
  first.release();
  assert.equal(q.usage('acme', recorded).runningSandboxes, 2);
  // A neighbour tenant has the server's default.
  q.admit('beta', newSandboxDemand(limits), () => recorded).release();
  assert.equal(q.limits('beta').runningSandboxes, 5);
  // A delete frees the slot.
  q.admit('acme', newSandboxDemand(limits), () => held).release();
  store.setTenantLimits('acme', {});
  assert.equal(q.limits('acme').runningSandboxes, 5);
  store.close();
});
