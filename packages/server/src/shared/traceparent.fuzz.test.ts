import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseTraceparent } from './traceparent.js';

test('traceparent: the W3C form is read; anything else is ignored', () => {
  assert.deepEqual(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01'), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' });
  assert.deepEqual(parseTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future'), { traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' });
  for (const bad of [undefined, '', '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-tail', 'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', '00-00000000000000000000000000000000-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01', '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01', '00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01'])
    assert.equal(parseTraceparent(bad), undefined, String(bad));
});

test('property: any header gives undefined or lowercase hex ids of the right length, never a throw', () => {
  const hex = (n: number) => fc.stringMatching(new RegExp(`^[0-9a-fA-F]{${n}}$`));
  const nearly = fc.tuple(hex(2), hex(32), hex(16), hex(2), fc.string({ maxLength: 8 })).map(([v, t, s, f, tail]) => `${v}-${t}-${s}-${f}${tail}`);
  fc.assert(
    fc.property(fc.oneof(fc.string({ maxLength: 600 }), nearly), (h) => {
      const p = parseTraceparent(h);
      if (p) {
        assert.match(p.traceId, /^[0-9a-f]{32}$/);
        assert.match(p.spanId, /^[0-9a-f]{16}$/);
        assert.doesNotMatch(p.traceId, /^0+$/);
      }
    }),
    { numRuns: 2000 },
  );
});
