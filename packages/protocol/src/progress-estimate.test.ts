import { test } from 'node:test';
import assert from 'node:assert/strict';
import { byteRate, formatRemaining } from './progress-estimate.js';

test('byte rate: the average so far, the time left at it; nothing before a byte moved or without a total', () => {
  assert.deepEqual(byteRate({ done: 0, total: 100, elapsedMs: 1_000 }), { perSecond: undefined, remainingMs: undefined });
  assert.deepEqual(byteRate({ done: 50, elapsedMs: 0 }), { perSecond: undefined, remainingMs: undefined });
  assert.deepEqual(byteRate({ done: 50, elapsedMs: 2_000 }), { perSecond: 25, remainingMs: undefined });
  assert.deepEqual(byteRate({ done: 25, total: 100, elapsedMs: 1_000 }), { perSecond: 25, remainingMs: 3_000 });
  assert.deepEqual(byteRate({ done: 120, total: 100, elapsedMs: 1_000 }), { perSecond: 120, remainingMs: 0 }, 'more than announced: nothing left');
});

test('time left reads in whole seconds, minutes or hours, rounded up', () => {
  assert.equal(formatRemaining(0), '~1s left');
  assert.equal(formatRemaining(1_200), '~2s left');
  assert.equal(formatRemaining(59_000), '~59s left');
  assert.equal(formatRemaining(61_000), '~2m left');
  assert.equal(formatRemaining(3_600_000), '~1h0m left');
  assert.equal(formatRemaining(3_700_000), '~1h2m left');
});
