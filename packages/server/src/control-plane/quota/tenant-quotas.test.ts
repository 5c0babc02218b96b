import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { TenantQuotas, type TenantHoldings } from './tenant-quotas.js';
import { newSandboxDemand, UNLIMITED } from './tenant-usage.js';

const limits = { memoryMb: 512, cpus: 1, pids: 1024 };
const box = (id: string, state: SandboxInfo['state'] = 'running') => ({ id, state, limits });
const exhausted = (e: ForkdError) => e.code === 'RESOURCE_EXHAUSTED' && e.details?.limit === 'runningSandboxes';

test('the last slot goes to one of two calls in flight; a bound sandbox counts once; a release frees its slot', async () => {
  const store = new SqliteControlStore(':memory:');
  const q = new TenantQuotas(store, { ...UNLIMITED, runningSandboxes: 5 });
  await store.setTenantLimits('acme', { runningSandboxes: 2 });
  const held: TenantHoldings = { sandboxes: [box('sbx-1')], snapshots: 0 };
  const first = await q.admit('acme', newSandboxDemand(limits), async () => held);
  // The first create is still starting: the second call for the same (last) slot is refused.
  await assert.rejects(q.admit('acme', newSandboxDemand(limits), async () => held), exhausted);
  // Its record appears (bound): still counted once.
  first.bind('sbx-2');
  const recorded: TenantHoldings = { sandboxes: [box('sbx-1'), box('sbx-2', 'creating')], snapshots: 0 };
  assert.equal(q.usage('acme', recorded).runningSandboxes, 2);
  first.release();
  assert.equal(q.usage('acme', recorded).runningSandboxes, 2);
  // A neighbour tenant has the server's default.
  (await q.admit('beta', newSandboxDemand(limits), async () => recorded)).release();
  assert.equal((await q.limits('beta')).runningSandboxes, 5);
  // A delete frees the slot.
  (await q.admit('acme', newSandboxDemand(limits), async () => held)).release();
  await store.setTenantLimits('acme', {});
  assert.equal((await q.limits('acme')).runningSandboxes, 5);
  await store.close();
});

test('checks of one tenant run one at a time though reading its holdings is slow: of calls started together for the last slot, one wins', async () => {
  const store = new SqliteControlStore(':memory:');
  const q = new TenantQuotas(store, { ...UNLIMITED, runningSandboxes: 2 });
  const held: TenantHoldings = { sandboxes: [box('sbx-1')], snapshots: 0 };
  let reading = 0;
  let overlapped = false;
  const slow = async () => {
    if (++reading > 1) overlapped = true;
    await sleep(20);
    reading--;
    return held;
  };
  const results = await Promise.allSettled(Array.from({ length: 4 }, () => q.admit('acme', newSandboxDemand(limits), slow)));
  assert.equal(overlapped, false, 'no two checks of a tenant read its holdings at once');
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  for (const r of results) if (r.status === 'rejected') assert.ok(exhausted(r.reason as ForkdError));
  // A refusal does not wedge the queue; another tenant never waited for it.
  (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ release(): void }>).value.release();
  (await q.admit('acme', newSandboxDemand(limits), async () => held)).release();
  await store.close();
});
