import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { addUsage, checkTenantQuota, effectiveLimits, NO_USAGE, newSandboxDemand, sandboxUsage, UNLIMITED } from './tenant-usage.js';

const limits = { memoryMb: 512, cpus: 1, pids: 1024 };

test('running sandboxes hold memory, CPUs and disk; paused ones disk only; stopping ones nothing', () => {
  assert.deepEqual(sandboxUsage({ state: 'running', limits }), { runningSandboxes: 1, memoryMb: 512, cpus: 1, snapshots: 0, diskMb: 10240 });
  assert.deepEqual(sandboxUsage({ state: 'creating', limits: { ...limits, diskMb: 100 } }), { runningSandboxes: 1, memoryMb: 512, cpus: 1, snapshots: 0, diskMb: 100 });
  assert.deepEqual(sandboxUsage({ state: 'paused', limits }), { ...NO_USAGE, diskMb: 10240 });
  assert.deepEqual(sandboxUsage({ state: 'failed', limits }), { ...NO_USAGE, diskMb: 10240 });
  assert.deepEqual(sandboxUsage({ state: 'stopping', limits }), NO_USAGE);
});

test('a fork of N counts N', () => {
  assert.deepEqual(addUsage(NO_USAGE, newSandboxDemand({ memoryMb: 256, cpus: 0.5 }), 3), { runningSandboxes: 3, memoryMb: 768, cpus: 1.5, snapshots: 0, diskMb: 30720 });
});

test('overrides win over defaults, null included', () => {
  const d = { ...UNLIMITED, runningSandboxes: 10, memoryMb: 4096 };
  assert.deepEqual(effectiveLimits({ runningSandboxes: 2, memoryMb: null }, d), { ...UNLIMITED, runningSandboxes: 2 });
  assert.deepEqual(effectiveLimits(undefined, d), d);
});

test('the first limit crossed is named; the last slot can be taken, not one more', () => {
  const l = { ...UNLIMITED, runningSandboxes: 2, memoryMb: 1024 };
  const used = addUsage(NO_USAGE, newSandboxDemand({ memoryMb: 512, cpus: 1 }));
  checkTenantQuota('acme', used, newSandboxDemand({ memoryMb: 512, cpus: 1 }), l);
  assert.throws(
    () => checkTenantQuota('acme', addUsage(used, used), newSandboxDemand({ memoryMb: 32, cpus: 1 }), l),
    (e: ForkdError) => e.code === 'RESOURCE_EXHAUSTED' && e.details?.limit === 'runningSandboxes' && /runningSandboxes/.test(e.message) && e.details.max === 2,
  );
  assert.throws(() => checkTenantQuota('acme', used, newSandboxDemand({ memoryMb: 1024, cpus: 1 }), l), (e: ForkdError) => e.details?.limit === 'memoryMb' && e.details.used === 512);
});

test('only what a demand adds is checked: over a lowered disk limit, a resume (no disk) still passes', () => {
  const l = { ...UNLIMITED, diskMb: 1000 };
  const used = { ...NO_USAGE, diskMb: 20480 };
  checkTenantQuota('acme', used, { ...NO_USAGE, runningSandboxes: 1, memoryMb: 512, cpus: 1 }, l);
  assert.throws(() => checkTenantQuota('acme', used, newSandboxDemand({ memoryMb: 512, cpus: 1 }), l), (e: ForkdError) => e.details?.limit === 'diskMb');
  assert.throws(() => checkTenantQuota('acme', { ...NO_USAGE, snapshots: 5 }, { ...NO_USAGE, snapshots: 1 }, { ...UNLIMITED, snapshots: 5 }), (e: ForkdError) => e.details?.limit === 'snapshots');
  checkTenantQuota('acme', { ...NO_USAGE, cpus: 1.5 }, { ...NO_USAGE, cpus: 0.5 }, { ...UNLIMITED, cpus: 2 });
});
