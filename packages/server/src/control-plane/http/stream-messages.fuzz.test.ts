import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hostileBytes } from '../../testing/fuzz-bytes.js';
import { ForkdError } from '@forkd/protocol';
import { parseControl, parseOpen, rawBytes } from './stream-messages.js';
import { proxyTarget } from './port-proxy.js';

/**
 * A stream socket's messages and the port proxy's request targets, from a
 * client: a typed result or ForkdError whatever the bytes, never a throw.
 */

const valid = fc.oneof(
  fc.record({ op: fc.constant('spawn'), spawn: fc.record({ cmd: fc.array(fc.string({ minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 3 }) }) }),
  fc.record({ op: fc.constant('attach'), pid: fc.integer({ min: 1, max: 1 << 22 }) }),
  fc.record({ type: fc.constant('resize'), cols: fc.integer({ min: 1, max: 1000 }), rows: fc.integer({ min: 1, max: 1000 }) }),
  fc.record({ type: fc.constant('signal'), signal: fc.integer({ min: 1, max: 64 }) }),
  fc.constant({ type: 'stdin_eof' }),
);
const bytesOf = (v: unknown) => Buffer.from(JSON.stringify(v));
const damaged = hostileBytes(valid.map(bytesOf), 300);
const anyMessage = fc.oneof(damaged, fc.uint8Array({ maxLength: 300 }).map((u) => Buffer.from(u)), fc.jsonValue({ maxDepth: 4 }).map(bytesOf));

test('open and control messages: any bytes decode to a message or INVALID_ARGUMENT', () => {
  fc.assert(
    fc.property(anyMessage, fc.boolean(), (b, binary) => {
      for (const r of [parseOpen(b, binary), parseControl(b)]) {
        if (!r.ok) {
          assert.ok(r.error instanceof ForkdError);
          assert.equal(r.error.code, 'INVALID_ARGUMENT');
        }
      }
    }),
    { numRuns: 5000 },
  );
});

test('valid messages still decode', () => {
  fc.assert(
    fc.property(valid, (v) => {
      const r = 'op' in v ? parseOpen(bytesOf(v), false) : parseControl(bytesOf(v));
      assert.ok(r.ok, JSON.stringify(v));
    }),
    { numRuns: 1000 },
  );
  // Fragmented messages arrive as arrays of buffers, binary ones as ArrayBuffers.
  assert.deepEqual(rawBytes([Buffer.from('a'), Buffer.from('b')]), Buffer.from('ab'));
  assert.deepEqual(rawBytes(new Uint8Array([1, 2]).buffer), Buffer.from([1, 2]));
  assert.equal(parseOpen(bytesOf({ op: 'attach' }), false).ok, false);
});

test('port proxy targets: any host and path give a target, none, or a ForkdError', () => {
  const id = 'sbx-abc123';
  const url = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.tuple(fc.integer({ min: -5, max: 200_000 }), fc.string({ maxLength: 30 })).map(([p, rest]) => `/sandboxes/${id}/ports/${p}/${rest}`),
  );
  const host = fc.option(fc.oneof(fc.string({ maxLength: 60 }), fc.integer({ min: 0, max: 99_999 }).map((p) => `${p}-${id}.sbx.test`)), { nil: undefined });
  fc.assert(
    fc.property(host, url, fc.option(fc.constant('sbx.test'), { nil: undefined }), (h, u, domain) => {
      try {
        const t = proxyTarget(h, u, domain);
        if (t) assert.ok(t.port >= 1 && t.port <= 65535);
      } catch (err) {
        assert.ok(err instanceof ForkdError && err.code === 'INVALID_ARGUMENT', `threw ${String(err)}`);
      }
    }),
    { numRuns: 5000 },
  );
});
