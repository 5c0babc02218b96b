import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { encodeFrame, encodeTlv, FrameReader, K, MAX_FRAME, ProtocolError, T, Tlv } from './guest-frames.js';
import { guestError } from './guest-connection.js';
import { hostileBytes, prefixes } from '../../testing/fuzz-bytes.js';

test('TLV round trip of ints, strings and repeated keys', () => {
  const buf = encodeTlv([
    [K.PID, 4242],
    [K.ARG, 'echo'],
    [K.ARG, 'héllo'],
    [K.TAG, undefined],
    [K.PTY, true],
  ]);
  const t = new Tlv(buf);
  assert.equal(t.reqInt(K.PID), 4242);
  assert.deepEqual(t.strs(K.ARG), ['echo', 'héllo']);
  assert.equal(t.str(K.TAG), undefined);
  assert.equal(t.int(K.PTY), 1);
});

test('negative ints survive', () => {
  assert.equal(new Tlv(encodeTlv([[K.EXIT_CODE, -1]])).int(K.EXIT_CODE), -1);
});

test('untrusted TLV is rejected, never over-read', () => {
  const good = encodeTlv([[K.NAME, 'abc']]);
  assert.throws(() => new Tlv(good.subarray(0, good.length - 1)), ProtocolError);
  assert.throws(() => new Tlv(Buffer.from([1, 0, 0])), ProtocolError);
  const lying = Buffer.from(good);
  lying.writeUInt32BE(0xffffffff, 1);
  assert.throws(() => new Tlv(lying), ProtocolError);
  assert.throws(() => new Tlv(encodeTlv([[K.PID, Buffer.from([1, 2, 3])]])).int(K.PID), ProtocolError);
  assert.throws(() => new Tlv(encodeTlv([[K.NAME, Buffer.from('a\0b')]])).str(K.NAME), ProtocolError);
  assert.throws(() => new Tlv(encodeTlv([[K.NAME, Buffer.alloc(70_000, 97)]])).str(K.NAME), ProtocolError);
  assert.throws(() => encodeTlv([[K.NAME, 'a\0b']]), ProtocolError);
});

test('frames split across chunks are reassembled', () => {
  const a = encodeFrame(T.STDOUT, Buffer.from('hello'));
  const b = encodeFrame(T.EXIT, encodeTlv([[K.EXIT_CODE, 0]]));
  const all = Buffer.concat([a, b]);
  const r = new FrameReader();
  const frames = [];
  for (let i = 0; i < all.length; i++) frames.push(...r.push(all.subarray(i, i + 1)));
  assert.equal(frames.length, 2);
  assert.equal(frames[0]!.type, T.STDOUT);
  assert.equal(frames[0]!.payload.toString(), 'hello');
  assert.equal(new Tlv(frames[1]!.payload).reqInt(K.EXIT_CODE), 0);
});

test('an oversized or empty frame length is a protocol error before any allocation', () => {
  const r = new FrameReader();
  const h = Buffer.alloc(4);
  h.writeUInt32BE(MAX_FRAME + 1);
  assert.throws(() => r.push(h), ProtocolError);
  assert.throws(() => new FrameReader().push(Buffer.from([0, 0, 0, 0])), ProtocolError);
});

/** Runs `f`; anything thrown but the decoder's own ProtocolError fails the property. */
function onlyProtocolErrors(f: () => unknown): void {
  try {
    f();
  } catch (err) {
    if (!(err instanceof ProtocolError)) throw err;
  }
}

const exitFrame = encodeFrame(T.EXIT, encodeTlv([[K.EXIT_CODE, 0], [K.DROPPED, 3]]));
const entryFrame = encodeFrame(T.ENTRY, encodeTlv([[K.NAME, 'file.txt'], [K.SIZE, 42], [K.MODE, 0o644], [K.MTIME, 1700000000], [K.TYPE, 'file'], [K.ENTRIES, encodeTlv([[K.NAME, 'nested']])]]));
const helloFrame = encodeFrame(T.HELLO_OK, encodeTlv([[K.VERSION, 3], [K.AGENT, 'forkd-agent 1.0']]));
const stdoutFrame = encodeFrame(T.STDOUT, Buffer.from('hello\n'));
const errorFrame = encodeFrame(T.ERROR, encodeTlv([[K.CODE, 'ENOENT'], [K.MESSAGE, 'no such file']]));
const stream = Buffer.concat([helloFrame, stdoutFrame, entryFrame, errorFrame, exitFrame]);

/** Every accessor a host handler uses on a guest's TLV, over every key. */
function readAll(payload: Buffer): void {
  const t = new Tlv(payload);
  for (const k of Object.values(K)) {
    onlyProtocolErrors(() => t.int(k));
    onlyProtocolErrors(() => t.str(k));
    onlyProtocolErrors(() => t.strs(k));
    onlyProtocolErrors(() => t.nested(k).forEach((n) => n.str(K.NAME)));
    t.has(k);
    t.raws(k);
  }
  onlyProtocolErrors(() => guestError(t));
}

test('fuzz: frames and TLVs from a hostile agent: only ProtocolError, and what decodes is bounded', () => {
  fc.assert(
    fc.property(hostileBytes([stream, exitFrame, entryFrame, helloFrame], 4096), fc.array(fc.nat(64), { maxLength: 8 }), (b, cuts) => {
      const r = new FrameReader();
      let off = 0;
      onlyProtocolErrors(() => {
        for (const c of [...cuts, b.length]) {
          for (const f of r.push(b.subarray(off, off + c + 1))) {
            assert.ok(f.payload.length < MAX_FRAME);
            onlyProtocolErrors(() => readAll(f.payload));
          }
          off += c + 1;
        }
      });
      onlyProtocolErrors(() => readAll(b));
      onlyProtocolErrors(() => readAll(b.subarray(5)));
    }),
    { numRuns: 2000 },
  );
});

test('fuzz: a real stream gives the same frames however it is cut; a truncated one gives only its whole frames', () => {
  const whole = new FrameReader().push(stream);
  assert.equal(whole.length, 5);
  fc.assert(
    fc.property(fc.array(fc.nat(stream.length), { maxLength: 12 }), (cuts) => {
      const r = new FrameReader();
      const got = [];
      let prev = 0;
      for (const c of [...cuts.sort((a, b) => a - b), stream.length]) {
        got.push(...r.push(stream.subarray(prev, c)));
        prev = c;
      }
      assert.deepEqual(got, whole);
    }),
    { numRuns: 1000 },
  );
  // Read into one buffer used again for every read (the connection's shared read buffer): what comes out is a copy.
  fc.assert(
    fc.property(fc.array(fc.nat(stream.length), { maxLength: 12 }), (cuts) => {
      const r = new FrameReader();
      const reused = Buffer.alloc(stream.length);
      const got = [];
      let prev = 0;
      for (const c of [...cuts.sort((a, b) => a - b), stream.length]) {
        stream.copy(reused, 0, prev, c);
        got.push(...r.push(reused.subarray(0, c - prev), true));
        reused.fill(0xee);
        prev = c;
      }
      assert.deepEqual(got, whole);
    }),
    { numRuns: 1000 },
  );
  const ends = [helloFrame, stdoutFrame, entryFrame, errorFrame, exitFrame].reduce<number[]>((a, f) => [...a, (a.at(-1) ?? 0) + f.length], []);
  for (const p of prefixes(stream)) assert.equal(new FrameReader().push(p).length, ends.filter((e) => e <= p.length).length, `prefix ${p.length}`);
});
