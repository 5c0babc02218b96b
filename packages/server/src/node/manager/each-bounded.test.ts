import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { eachBounded } from './each-bounded.js';

test('a stuck item delays no other, and the pass ends at its timeout', async () => {
  const done: string[] = [];
  const timedOut: string[] = [];
  const settled: string[] = [];
  let release!: () => void;
  const stuck = new Promise<void>((r) => (release = r));
  const t0 = Date.now();
  await eachBounded(
    ['stuck', 'a', 'b', 'c', 'd', 'e'],
    { concurrency: 2, timeoutMs: 300, onTimeout: (i) => timedOut.push(i), onError: () => {}, onSettled: (i) => settled.push(i) },
    async (i) => {
      if (i === 'stuck') return stuck;
      await sleep(20);
      done.push(i);
    },
  );
  const took = Date.now() - t0;
  assert.deepEqual(done.sort(), ['a', 'b', 'c', 'd', 'e'], 'every other item was worked on');
  assert.deepEqual(timedOut, ['stuck']);
  assert.ok(took >= 290 && took < 1000, `the pass waited for the stuck item's timeout only (${took} ms)`);
  assert.ok(!settled.includes('stuck'), 'its work goes on');
  release();
  await sleep(10);
  assert.ok(settled.includes('stuck'), 'and is reported when it ends');
});

test('at most `concurrency` at once; errors are reported, not thrown', async () => {
  let now = 0;
  let peak = 0;
  const errors: number[] = [];
  await eachBounded(
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
    { concurrency: 4, timeoutMs: 5000, onTimeout: () => assert.fail('no timeout'), onError: (i) => errors.push(i) },
    async (i) => {
      peak = Math.max(peak, ++now);
      await sleep(10);
      now--;
      if (i % 5 === 0) throw new Error('boom');
    },
  );
  assert.equal(peak, 4);
  assert.deepEqual(errors.sort((a, b) => a - b), [5, 10]);
});
