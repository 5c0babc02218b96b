import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ID_RANGE_SIZE, pickIdRange } from './id-ranges.js';

test('ranges are aligned, above 2^31, below (uid_t)-1, and never one in use', () => {
  const first = pickIdRange(new Set(), () => 0);
  assert.equal(first, 2 ** 31);
  const last = pickIdRange(new Set(), () => 0.999999999);
  assert.ok(last + ID_RANGE_SIZE - 1 < 2 ** 32 - 1, 'the last id stays below 4294967295');
  assert.equal((last - 2 ** 31) % ID_RANGE_SIZE, 0);
  // A random source that always lands on a used range falls back to a scan.
  assert.equal(pickIdRange(new Set([2 ** 31]), () => 0), 2 ** 31 + ID_RANGE_SIZE);
});
