import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxMetrics } from '@forkd/protocol';
import { usageSample } from './usage.js';

const m = (over: Partial<SandboxMetrics>): SandboxMetrics => ({ memoryBytes: 100, memoryLimitBytes: 1000, cpuNanos: 0, pids: 1, oomKills: 0, pidsLimitHits: 0, diskBytes: 5000, diskWrittenBytes: 10, ...over });

test('CPU is CPU time over wall time, as a share of the sandbox CPUs; the first reading has none', () => {
  assert.equal(usageSample(m({}), undefined, 1000, 1).cpuPercent, undefined);
  // 0.5 s of CPU in 1 s on 1 CPU: 50%; on 2 CPUs: 25%.
  const before = { metrics: m({ cpuNanos: 1e9 }), at: 1000 };
  assert.equal(usageSample(m({ cpuNanos: 1.5e9 }), before, 2000, 1).cpuPercent, 50);
  assert.equal(usageSample(m({ cpuNanos: 1.5e9 }), before, 2000, 2).cpuPercent, 25);
  // A counter that went back (a restore) gives no reading rather than a negative one.
  assert.equal(usageSample(m({ cpuNanos: 0 }), before, 2000, 1).cpuPercent, undefined);
});

test('disk is the quota use against the quota when there is one, else the root filesystem bytes', () => {
  const q = usageSample(m({ diskQuotaUsedBytes: 300, diskQuotaBytes: 1000 }), undefined, 0, 1);
  assert.deepEqual([q.diskBytes, q.diskLimitBytes], [300, 1000]);
  const n = usageSample(m({}), undefined, 0, 1);
  assert.deepEqual([n.diskBytes, n.diskLimitBytes], [5000, undefined]);
});
