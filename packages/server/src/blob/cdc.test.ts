import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { pseudoRandom } from '../testing/pseudo-random.js';
import { Chunker, DEFAULT_CDC, type CdcParams } from './cdc.js';


function chunk(data: Uint8Array, pieces: number[], p?: CdcParams): Uint8Array[] {
  const c = new Chunker(p);
  const out: Uint8Array[] = [];
  let at = 0;
  for (const n of pieces) {
    out.push(...c.push(data.subarray(at, at + n)));
    at += n;
  }
  out.push(...c.push(data.subarray(at)));
  const last = c.end();
  if (last) out.push(last);
  return out;
}

const SMALL: CdcParams = { min: 64, avg: 256, max: 1024 };
const hashes = (cs: Uint8Array[]) => cs.map((c) => createHash('sha256').update(c).digest('hex'));

test('CDC: any bytes, pushed in any pieces, give the same chunks, which concatenate to the input and respect min/max', () => {
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 6000 }), fc.array(fc.nat(700), { maxLength: 20 }), fc.boolean(), (data, pieces, lowEntropy) => {
      if (lowEntropy) data = data.map((b) => b & 1); // long runs and repeats
      const whole = chunk(data, [], SMALL);
      const split = chunk(data, pieces, SMALL);
      assert.deepEqual(hashes(split), hashes(whole));
      assert.deepEqual(Buffer.concat(whole), Buffer.from(data));
      whole.forEach((c, i) => {
        assert.ok(c.length <= SMALL.max);
        if (i < whole.length - 1) assert.ok(c.length >= SMALL.min);
      });
    }),
    { numRuns: 300 },
  );
});

test('CDC: chunk sizes of random data centre on the average; runs of zeros are cut identically', () => {
  const data = pseudoRandom(32 << 20, 1);
  const cs = chunk(data, []);
  const mean = data.length / cs.length;
  assert.ok(mean > DEFAULT_CDC.avg * 0.6 && mean < DEFAULT_CDC.avg * 1.6, `mean chunk ${mean}`);
  const zeros = chunk(new Uint8Array(16 << 20), [1 << 20]);
  assert.ok(new Set(hashes(zeros.slice(0, -1))).size === 1, 'zero runs dedupe');
});

test('CDC: bytes inserted near the start of a 64 MiB stream change only the chunks around them', () => {
  const data = pseudoRandom(64 << 20, 2);
  const before = hashes(chunk(data, [1 << 20, 3 << 20]));
  for (const [at, ins] of [[1000, 1], [300_000, 4096], [5_000_000, 100]] as const) {
    const edited = Buffer.concat([data.subarray(0, at), pseudoRandom(ins, 3), data.subarray(at)]);
    const after = hashes(chunk(edited, [7 << 20]));
    const old = new Set(before);
    const fresh = after.filter((h) => !old.has(h)).length;
    assert.ok(fresh <= 2, `${fresh} of ${after.length} chunks changed after inserting ${ins} bytes at ${at}`);
  }
});

test('CDC: chunks are copies: the caller may reuse the buffer it pushed (a Buffer too, whose slice is a view)', () => {
  const c = new Chunker({ min: 64, avg: 256, max: 1024 });
  const buf = Buffer.from(pseudoRandom(8192, 4));
  const chunks = c.push(buf);
  const before = chunks.map((x) => Buffer.from(x));
  buf.fill(0);
  assert.ok(chunks.length > 2);
  assert.deepEqual(chunks.map((x) => Buffer.from(x)), before);
});
