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
  await first.bind('sbx-2');
  const recorded: TenantHoldings = { sandboxes: [box('sbx-1'), box('sbx-2', 'creating')], snapshots: 0 };
  assert.equal((await q.usage('acme', recorded)).runningSandboxes, 2);
  await first.release();
  assert.equal((await q.usage('acme', recorded)).runningSandboxes, 2);
  // A neighbour tenant has the server's default.
  await (await q.admit('beta', newSandboxDemand(limits), async () => recorded)).release();
  assert.equal((await q.limits('beta')).runningSandboxes, 5);
  // A delete frees the slot.
  await (await q.admit('acme', newSandboxDemand(limits), async () => held)).release();
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
  await (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
  await (await q.admit('acme', newSandboxDemand(limits), async () => held)).release();
  await store.close();
});

test('two control-plane replicas on one store: of calls for the last slot made on both at once, one wins; what one reserved the other counts', async () => {
  const store = new SqliteControlStore(':memory:');
  const [r1, r2] = [new TenantQuotas(store, { ...UNLIMITED, runningSandboxes: 2 }), new TenantQuotas(store, { ...UNLIMITED, runningSandboxes: 2 })];
  const held: TenantHoldings = { sandboxes: [box('sbx-1')], snapshots: 0 };
  let reading = 0;
  let overlapped = false;
  const slow = async () => {
    if (++reading > 1) overlapped = true;
    await sleep(15);
    reading--;
    return held;
  };
  const results = await Promise.allSettled([r1, r2, r1, r2].map((q) => q.admit('acme', newSandboxDemand(limits), slow)));
  assert.equal(overlapped, false, 'the replicas never checked the tenant at once');
  assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  const won = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ bind(id: string): Promise<void>; release(): Promise<void> }>).value;
  assert.equal((await r2.usage('acme', held)).runningSandboxes, 2, 'either replica counts the reservation');
  await won.bind('sbx-2');
  const recorded: TenantHoldings = { sandboxes: [box('sbx-1'), box('sbx-2', 'creating')], snapshots: 0 };
  assert.equal((await r1.usage('acme', recorded)).runningSandboxes, 2, 'bound: counted once');
  await won.release();
  assert.equal((await r2.usage('acme', held)).runningSandboxes, 1, 'released: the slot is free on every replica');
  // Unlimited demand takes no lease and stores nothing.
  await (await r1.admit('acme', { ...newSandboxDemand(limits), runningSandboxes: 0, memoryMb: 0, cpus: 0, diskMb: 0, snapshots: 1 }, slow)).release();
  assert.deepEqual(await store.reservations('acme'), []);
  await store.close();
});
