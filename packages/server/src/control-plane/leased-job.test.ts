import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SqliteControlStore } from '../store/sqlite-control-store.js';
import { startLeasedJob } from './leased-job.js';

test('a leased job runs on one holder at a time; stopping gives it up, and a holder that vanished loses it once its lease lapses', async () => {
  const store = new SqliteControlStore(':memory:');
  const runs: string[] = [];
  const job = (holder: string) => startLeasedJob({ leases: store, name: 'job', holder, everyMs: 20, ttlMs: 300, run: async () => void runs.push(holder) });
  try {
    const stopA = job('a');
    const stopB = job('b');
    await sleep(150);
    assert.ok(runs.length >= 3, runs.join());
    assert.deepEqual([...new Set(runs)], ['a']);
    await stopA();
    runs.length = 0;
    await sleep(100);
    assert.deepEqual([...new Set(runs)], ['b'], 'b takes over at its next tick once a stopped');
    // b vanishes without releasing, as a killed process would: its timer stops, a last renewal stays.
    await stopB();
    assert.equal(await store.tryLease('job', 'b', 300), true);
    runs.length = 0;
    const t0 = Date.now();
    const stopC = job('c');
    await sleep(150);
    assert.deepEqual(runs, [], 'not while b\'s lease holds');
    while (runs.length === 0) await sleep(10);
    assert.ok(Date.now() - t0 >= 250, `c ran ${Date.now() - t0} ms after b's last renewal`);
    await stopC();
  } finally {
    await store.close();
  }
});

test('a failing run is logged and the job keeps ticking; runs never overlap', async () => {
  const store = new SqliteControlStore(':memory:');
  const warnings: string[] = [];
  const logger = { debug() {}, info() {}, error() {}, warn: (msg: string) => void warnings.push(msg) };
  let active = 0;
  let most = 0;
  let n = 0;
  const stop = startLeasedJob({
    leases: store, name: 'slow', holder: 'a', everyMs: 5, ttlMs: 1000, logger,
    run: async () => {
      most = Math.max(most, ++active);
      await sleep(30);
      active--;
      if (++n === 1) throw new Error('first run fails');
    },
  });
  await sleep(200);
  await stop();
  assert.ok(n >= 3, `${n} runs`);
  assert.equal(most, 1);
  assert.deepEqual(warnings, ['leased job failed']);
  await store.close();
});

test('a run longer than the lease keeps it: another replica does not start the same work half-way', async () => {
  const store = new SqliteControlStore(':memory:');
  const runs: string[] = [];
  let release!: () => void;
  const long = new Promise<void>((r) => (release = r));
  const stopA = startLeasedJob({ leases: store, name: 'long', holder: 'a', everyMs: 20, ttlMs: 100, run: async () => {
    runs.push('a');
    await long;
  } });
  await sleep(30);
  const stopB = startLeasedJob({ leases: store, name: 'long', holder: 'b', everyMs: 20, ttlMs: 100, run: async () => void runs.push('b') });
  try {
    await sleep(400);
    assert.deepEqual(runs, ['a'], 'b never ran while a\'s run (4 TTLs long) went on');
  } finally {
    release();
    await stopA();
    await stopB();
    await store.close();
  }
});
