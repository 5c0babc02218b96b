import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readHostLimits, sandboxRlimits } from './rlimits.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max core file size        0                    unlimited            bytes
Max processes             96365                96365                processes
Max open files            1024                 20000                files
`;

test("the daemon's hard limits are read from /proc/self/limits", () => {
  assert.deepEqual(readHostLimits(LIMITS), { nofile: 20000, nproc: 96365 });
  assert.deepEqual(readHostLimits(LIMITS.replace('96365                96365', '96365                unlimited')).nproc, Infinity);
  const own = readHostLimits();
  assert.ok(own.nofile > 0 && own.nproc > 0);
});

test('no core dumps, and nofile/nproc never above what the daemon has', () => {
  const byType = (host: { nofile: number; nproc: number }) => Object.fromEntries(sandboxRlimits(host).map((r) => [r.type, [r.soft, r.hard]]));
  assert.deepEqual(byType({ nofile: 20000, nproc: Infinity }), { RLIMIT_CORE: [0, 0], RLIMIT_NOFILE: [20000, 20000], RLIMIT_NPROC: [65536, 65536] });
  assert.deepEqual(byType({ nofile: 1 << 20, nproc: 4096 }), { RLIMIT_CORE: [0, 0], RLIMIT_NOFILE: [65536, 65536], RLIMIT_NPROC: [4096, 4096] });
});
