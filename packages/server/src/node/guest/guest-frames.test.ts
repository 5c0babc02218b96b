import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeFrame, encodeTlv, FrameReader, K, MAX_FRAME, ProtocolError, T, Tlv } from './guest-frames.js';

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
