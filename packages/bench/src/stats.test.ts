import { test } from 'node:test';
import assert from 'node:assert/strict';
import { summarize } from './stats.js';

test('nearest-rank median and p95', () => {
  const s = summarize(Array.from({ length: 100 }, (_, i) => 100 - i));
  assert.equal(s.p50, 50);
  assert.equal(s.p95, 95);
  assert.equal(s.min, 1);
  assert.equal(s.max, 100);
  assert.equal(summarize([7]).p95, 7);
  assert.ok(Number.isNaN(summarize([]).p50));
});
