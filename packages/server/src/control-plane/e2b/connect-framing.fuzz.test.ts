import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hostileBytes } from '../../testing/fuzz-bytes.js';
import { envelope, FLAG_END_STREAM, FLAG_MESSAGE, jsonPayload, parseEnvelopes, streamRequestMessage, takeEnvelope } from './connect-framing.js';
import { ListDirRequest, MoveRequest, parseMessage, ProcessRequest, SendInputRequest, SendSignalRequest, StartRequest, UpdateRequest, WatchDirRequest } from './envd-messages.js';
import { parseInputEvent } from './stream-input.js';
import { RpcError } from './e2b-errors.js';

/**
 * Connect envelopes and envd's JSON messages from a client: whatever the
 * bytes, a typed result (or the parser's RpcError), never a throw.
 */

const json = fc.jsonValue({ maxDepth: 4 });
const validBody = fc.array(fc.tuple(fc.constantFrom(FLAG_MESSAGE, FLAG_END_STREAM), json), { minLength: 1, maxLength: 5 });
const bodyOf = (msgs: [number, unknown][]) => Buffer.concat(msgs.map(([f, m]) => envelope(f, m)));

/** A valid body cut short, flipped, grown, spliced, or its length fields lying. */
const damaged = hostileBytes(validBody.map(bodyOf), 300);
const anyBytes = fc.oneof(damaged, fc.uint8Array({ maxLength: 300 }).map((u) => Buffer.from(u)));

function noThrow(f: () => unknown): void {
  try {
    f();
  } catch (err) {
    assert.fail(`threw ${String(err)}`);
  }
}

test('valid envelope bodies parse back to their messages', () => {
  fc.assert(
    fc.property(validBody, (msgs) => {
      const r = parseEnvelopes(bodyOf(msgs));
      assert.ok(r.ok);
      assert.deepEqual(r.value.map((e) => [e.flag, JSON.parse(e.payload.toString())]), msgs.map(([f, m]) => [f, JSON.parse(JSON.stringify(m))]));
      const first = streamRequestMessage(bodyOf(msgs));
      assert.deepEqual(first, { ok: true, value: JSON.parse(JSON.stringify(msgs[0]![1])) });
    }),
    { numRuns: 1000 },
  );
});

test('truncated, mutated, oversized and random bodies: a typed result, never a throw', () => {
  fc.assert(
    fc.property(anyBytes, fc.integer({ min: 0, max: 2 ** 32 }), (b, max) => {
      noThrow(() => {
        const r = parseEnvelopes(b);
        assert.equal(typeof r.ok, 'boolean');
        assert.equal(typeof streamRequestMessage(b).ok, 'boolean');
        const t = takeEnvelope(b, max);
        if (t?.ok) assert.ok(t.value.envelope.payload.length <= max);
        jsonPayload(b);
      });
    }),
    { numRuns: 4000 },
  );
});

test('a length past the limit is refused before its bytes arrive', () => {
  const head = Buffer.from([0, 0xff, 0xff, 0xff, 0xff]);
  assert.deepEqual(takeEnvelope(head, 16 * 1024 * 1024), { ok: false, error: 'message too large' });
  assert.equal(takeEnvelope(Buffer.from([0, 0, 0, 0, 9, 1]), 100), undefined);
});

test('envd request messages: any JSON is a message or an RpcError', () => {
  const schemas = [StartRequest, ProcessRequest, SendInputRequest, SendSignalRequest, UpdateRequest, ListDirRequest, MoveRequest, WatchDirRequest];
  fc.assert(
    fc.property(fc.oneof(json, anyBytes.map((b) => jsonPayload(b))), fc.constantFrom(...schemas), (msg, schema) => {
      try {
        parseMessage(schema, msg);
      } catch (err) {
        assert.ok(err instanceof RpcError, `threw ${String(err)}`);
      }
    }),
    { numRuns: 3000 },
  );
  // A valid one still parses.
  assert.deepEqual(parseMessage(SendInputRequest, { process: { pid: 7 }, input: { stdin: 'aGk=' } }).input, { stdin: 'aGk=' });
});

test('StreamInput events: any payload is an event or a typed error', () => {
  fc.assert(
    fc.property(fc.oneof(anyBytes, json.map((j) => Buffer.from(JSON.stringify(j) ?? ''))), (b) => {
      noThrow(() => assert.equal(typeof parseInputEvent(b).ok, 'boolean'));
    }),
    { numRuns: 3000 },
  );
  const ev = parseInputEvent(Buffer.from(JSON.stringify({ start: { process: { tag: 't' } } })));
  assert.ok(ev.ok && ev.value.start?.process.tag === 't');
});
