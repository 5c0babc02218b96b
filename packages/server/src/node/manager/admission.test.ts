import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ForkdError } from '@forkd/protocol';
import { checkAdmission, commitOf, NodeAdmission, type AdmissionRecord } from './admission.js';
import { parseMemTotalMb } from './host-capacity.js';
import { checkMaxima, clampToMaxima, sandboxMaxima } from './sandbox-maxima.js';

const host = { memoryMb: 1000, cpus: 2 };

test('memory may be overcommitted up to the ratio, not beyond; the refusal names the knob', () => {
  checkAdmission({ memoryMb: 3000, cpus: 0 }, { memoryMb: 1000, cpus: 1 }, host, { memory: 4, cpus: 0 });
  assert.throws(
    () => checkAdmission({ memoryMb: 3500, cpus: 0 }, { memoryMb: 512, cpus: 1 }, host, { memory: 4, cpus: 0 }),
    (e: ForkdError) => e.code === 'RESOURCE_EXHAUSTED' && e.details?.limit === 'FORKD_MEMORY_OVERCOMMIT' && /FORKD_MEMORY_OVERCOMMIT/.test(e.message),
  );
});

test('CPUs are checked only when a ratio is set', () => {
  checkAdmission({ memoryMb: 0, cpus: 100 }, { memoryMb: 1, cpus: 1 }, host, { memory: 4, cpus: 0 });
  checkAdmission({ memoryMb: 0, cpus: 7 }, { memoryMb: 1, cpus: 1 }, host, { memory: 4, cpus: 4 });
  assert.throws(() => checkAdmission({ memoryMb: 0, cpus: 7.5 }, { memoryMb: 1, cpus: 1 }, host, { memory: 4, cpus: 4 }), (e: ForkdError) => e.details?.limit === 'FORKD_CPU_OVERCOMMIT');
});

test('running and creating records count, paused ones do not; a held ticket counts its sandbox once, until released', () => {
  const records: AdmissionRecord[] = [
    { id: 'a', state: 'running', limits: { memoryMb: 1000, cpus: 1 } },
    { id: 'b', state: 'paused', limits: { memoryMb: 1000, cpus: 1 } },
    { id: 'c', state: 'creating', limits: { memoryMb: 1000, cpus: 1 } },
  ];
  const a = new NodeAdmission(host, { memory: 3, cpus: 0 });
  assert.deepEqual(a.committed(records), { memoryMb: 2000, cpus: 2 });
  // b resumes: held while it restores; the second resume of the same size finds no room.
  const t = a.admit(commitOf(records[1]!.limits), ['b'], records);
  assert.throws(() => a.check(commitOf({ memoryMb: 1000, cpus: 1 }), records), (e: ForkdError) => e.code === 'RESOURCE_EXHAUSTED');
  records[1]!.state = 'running';
  assert.equal(a.committed(records).memoryMb, 3000);
  t.release();
  assert.equal(a.committed(records).memoryMb, 3000);
  records.splice(0, 1);
  a.check(commitOf({ memoryMb: 1000, cpus: 1 }), records);
});

test('maxima follow the host unless configured; a request above one is INVALID_ARGUMENT naming it', () => {
  const m = sandboxMaxima(host);
  assert.deepEqual(m, { memoryMb: 1000, cpus: 2, pids: 65536 });
  assert.deepEqual(sandboxMaxima(host, { memoryMb: 4096, cpus: 0.5, pids: 100000 }), { memoryMb: 4096, cpus: 0.5, pids: 65536 });
  checkMaxima({ memoryMb: 1000, cpus: 2, pids: 65536 }, m);
  assert.throws(() => checkMaxima({ memoryMb: 1001, cpus: 1, pids: 10 }, m), (e: ForkdError) => e.code === 'INVALID_ARGUMENT' && e.details?.limit === 'FORKD_MAX_MEMORY_MB' && e.details.max === 1000);
  assert.throws(() => checkMaxima({ memoryMb: 10, cpus: 3, pids: 10 }, m), (e: ForkdError) => e.details?.limit === 'FORKD_MAX_CPUS');
  assert.throws(() => checkMaxima({ memoryMb: 10, cpus: 1, pids: 200 }, sandboxMaxima(host, { pids: 100 })), (e: ForkdError) => e.details?.limit === 'FORKD_MAX_PIDS');
  assert.deepEqual(clampToMaxima({ memoryMb: 2048, cpus: 2, x: 1 }, { memoryMb: 1000, cpus: 1, pids: 1 }), { memoryMb: 1000, cpus: 1, x: 1 });
});

test('MemTotal is read in MB', () => {
  assert.equal(parseMemTotalMb('MemTotal:       24683520 kB\nMemFree: 1 kB\n'), 24105);
});
