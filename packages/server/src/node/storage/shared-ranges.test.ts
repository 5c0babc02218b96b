import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseRanges } from './shared-ranges.js';

test('parseRanges: ascending disjoint "START LEN" lines; anything else is refused whole', () => {
  assert.deepEqual(parseRanges(''), { ok: true, ranges: [] });
  assert.deepEqual(parseRanges('0 4096\n8192 100\n'), { ok: true, ranges: [[0, 4096], [8192, 100]] });
  assert.deepEqual(parseRanges('0 4096\n4096 1\n'), { ok: true, ranges: [[0, 4096], [4096, 1]] }, 'adjacent is fine');
  for (const bad of ['0 0\n', '10 5\n0 5\n', '0 10\n5 10\n', '-1 5\n', '0x10 5\n', '1 2 3\n', ' 1 2\n', '1  2\n', '99999999999999999 1\n', '9007199254740991 1\n', '1\n', 'a b\n']) {
    assert.equal(parseRanges(bad).ok, false, JSON.stringify(bad));
  }
});

test('parseRanges (fuzz): never throws; what it accepts is ordered, disjoint and made of safe integers', () => {
  const line = fc.oneof(fc.string({ maxLength: 40 }), fc.tuple(fc.nat(), fc.nat()).map(([a, b]) => `${a} ${b}`));
  fc.assert(
    fc.property(fc.array(line, { maxLength: 20 }), (lines) => {
      const r = parseRanges(lines.join('\n'));
      if (!r.ok) return;
      let end = 0;
      for (const [s, l] of r.ranges) {
        assert.ok(Number.isSafeInteger(s) && Number.isSafeInteger(l) && l > 0 && s >= end && Number.isSafeInteger(s + l));
        end = s + l;
      }
    }),
    { numRuns: 2000 },
  );
});
