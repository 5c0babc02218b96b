import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { hostileBytes } from '../../testing/fuzz-bytes.js';
import { boundaryOf, MultipartError, multipartParts } from './multipart.js';

/**
 * Upload bodies from a client: a valid form yields its parts byte-exact;
 * any other bytes yield parts or a MultipartError, never another throw, and
 * never more than the body in memory.
 */

const BOUNDARY = 'fuzzBoundary123';
const part = fc.record({ name: fc.constantFrom('file', 'note'), filename: fc.option(fc.stringMatching(/^[a-z0-9._-]{1,12}$/), { nil: undefined }), data: fc.uint8Array({ maxLength: 200 }) });
const form = fc.array(part, { minLength: 1, maxLength: 4 });

function encode(parts: { name: string; filename: string | undefined; data: Uint8Array }[]): Buffer {
  const chunks: Buffer[] = [Buffer.from('preamble\r\n')];
  for (const p of parts) {
    chunks.push(Buffer.from(`--${BOUNDARY}\r\ncontent-disposition: form-data; name="${p.name}"${p.filename ? `; filename="${p.filename}"` : ''}\r\n\r\n`), Buffer.from(p.data), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${BOUNDARY}--\r\n`));
  return Buffer.concat(chunks);
}

async function* chunked(b: Buffer, size: number): AsyncGenerator<Buffer> {
  for (let i = 0; i < b.length; i += size) yield b.subarray(i, i + size);
}

async function parse(b: Buffer, size: number): Promise<{ name: string; filename: string | undefined; data: Buffer }[]> {
  const out = [];
  for await (const p of multipartParts(chunked(b, size), BOUNDARY)) {
    const bufs: Buffer[] = [];
    for await (const c of p.body) bufs.push(c);
    out.push({ name: p.name, filename: p.filename, data: Buffer.concat(bufs) });
  }
  return out;
}

test('valid forms parse to their parts, whatever the chunking', async () => {
  // A part's data may itself contain the delimiter only by chance; the generator's alphabet of bytes makes that vanishingly rare.
  await fc.assert(
    fc.asyncProperty(form, fc.integer({ min: 1, max: 64 }), async (parts, size) => {
      const got = await parse(encode(parts), size);
      assert.deepEqual(got.map((p) => [p.name, p.filename, p.data.toString('hex')]), parts.map((p) => [p.name, p.filename, Buffer.from(p.data).toString('hex')]));
    }),
    { numRuns: 500 },
  );
});

const damaged = hostileBytes(form.map(encode), 300);

test('truncated, mutated, oversized and random bodies: parts or a MultipartError', async () => {
  const bodies = fc.oneof(
    damaged,
    fc.uint8Array({ maxLength: 400 }).map((u) => Buffer.from(u)),
    // Part headers with no end: refused past the header bound, not held without end.
    fc.integer({ min: 17_000, max: 20_000 }).map((n) => Buffer.concat([Buffer.from(`--${BOUNDARY}\r\n`), Buffer.alloc(n, 0x61)])),
  );
  await fc.assert(
    fc.asyncProperty(bodies, fc.integer({ min: 1, max: 512 }), async (b, size) => {
      try {
        await parse(b, b.length > 4096 ? 4096 : size);
      } catch (err) {
        assert.ok(err instanceof MultipartError, `threw ${String(err)}`);
      }
    }),
    { numRuns: 2500 },
  );
});

test('any content type yields a boundary or undefined', () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 200 }), (ct) => {
      const b = boundaryOf(ct);
      assert.ok(b === undefined || (b.length >= 1 && b.length <= 70));
    }),
    { numRuns: 3000 },
  );
  assert.equal(boundaryOf(`multipart/form-data; boundary=${BOUNDARY}`), BOUNDARY);
});
