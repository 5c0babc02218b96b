import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from './blob-store.js';
import { CountingBlobStore as CountingStore } from '../testing/counting-blob-store.js';
import { chunkKey, ChunkedObjectSchema, objectDigest, readChunked, writeChunked, type ChunkedObject } from './chunked.js';
import { pseudoRandom } from '../testing/pseudo-random.js';

async function* pieces(data: Uint8Array, size = 1 << 20): AsyncIterable<Uint8Array> {
  for (let at = 0; at < data.length; at += size) yield data.subarray(at, at + size);
}

async function readAll(store: BlobStore, obj: ChunkedObject, prefix?: string): Promise<Buffer> {
  const out: Uint8Array[] = [];
  for await (const c of readChunked(store, obj, prefix === undefined ? {} : { prefix })) out.push(c);
  return Buffer.concat(out);
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** The stored bytes of each of the object's chunks, in order. */
const chunksOf = (store: CountingStore, obj: ChunkedObject, prefix = '') => obj.chunks.map((c) => store.objects.get(chunkKey(c.sha256, prefix))!);

test('writeChunked / readChunked: round trip; a second export of the same bytes uploads nothing; an edit uploads a chunk or two', async () => {
  const store = new CountingStore();
  const data = pseudoRandom(24 << 20, 5);
  const first = await writeChunked(store, pieces(data), { prefix: 'exp/' });
  assert.equal(first.object.size, data.length);
  assert.equal(first.object.sha256, objectDigest(first.object.chunks));
  assert.deepEqual(Buffer.concat(first.object.chunks.map((c) => Buffer.from(c.sha256))), Buffer.concat(chunksOf(store, first.object, 'exp/').map((b) => Buffer.from(sha(b)))));
  assert.equal(first.bytesUploaded, data.length);
  assert.equal(first.chunksUploaded, first.object.chunks.length);
  assert.ok(first.object.chunks.length > 20);
  assert.ok([...store.objects.keys()].every((k) => k.startsWith('exp/chunks/')));
  assert.deepEqual(await readAll(store, first.object, 'exp/'), data);

  const again = await writeChunked(store, pieces(data, 12345), { prefix: 'exp/' });
  assert.deepEqual(again.object, first.object);
  assert.equal(again.bytesUploaded, 0);
  assert.equal(again.chunksUploaded, 0);

  const edited = Buffer.from(data);
  edited.write('changed', 10 << 20);
  const third = await writeChunked(store, pieces(edited), { prefix: 'exp/' });
  assert.ok(third.chunksUploaded >= 1 && third.chunksUploaded <= 2, `${third.chunksUploaded} chunks`);
  assert.ok(third.bytesUploaded < 5 << 20);
  assert.deepEqual(await readAll(store, third.object, 'exp/'), edited);
});

test('writeChunked: repeated content within one stream is stored once; at most `concurrency` puts run at once', async () => {
  const store = new CountingStore();
  const zeros = new Uint8Array(20 << 20);
  const w = await writeChunked(store, pieces(zeros), { concurrency: 3 });
  assert.equal(w.chunksUploaded, new Set(w.object.chunks.map((c) => c.sha256)).size);
  assert.ok(w.chunksUploaded <= 2);
  const r = await writeChunked(new CountingStore(), pieces(pseudoRandom(8 << 20, 6)), { concurrency: 3 });
  assert.ok(r.chunksUploaded > 6);
  const s2 = new CountingStore();
  await writeChunked(s2, pieces(pseudoRandom(8 << 20, 7)), { concurrency: 3 });
  assert.ok(s2.maxActive <= 3 && s2.maxActive >= 2, `max ${s2.maxActive} at once`);
});

test('writeChunked: a failed export, retried, uploads only the chunks the first attempt did not', async () => {
  const store = new CountingStore();
  const data = pseudoRandom(12 << 20, 8);
  store.failPutsAfter = 10;
  await assert.rejects(writeChunked(store, pieces(data)), (e: unknown) => e instanceof ForkdError && e.code === 'UNAVAILABLE');
  const stored = store.objects.size;
  assert.equal(stored, 10);
  store.failPutsAfter = Infinity;
  const w = await writeChunked(store, pieces(data));
  assert.equal(w.chunksUploaded, w.object.chunks.length - stored);
  assert.deepEqual(await readAll(store, w.object), data);
});

test('writeChunked: a failing source fails the write and leaves no put running', async () => {
  const store = new CountingStore();
  async function* broken() {
    yield pseudoRandom(3 << 20, 9);
    throw new Error('source broke');
  }
  await assert.rejects(writeChunked(store, broken()), /source broke/);
  assert.equal(store.active, 0);
});

test('readChunked: a damaged, missing or mislabelled chunk is an INTERNAL error with a reason', async () => {
  const store = new CountingStore();
  const data = pseudoRandom(4 << 20, 10);
  const { object } = await writeChunked(store, pieces(data));
  const key = chunkKey(object.chunks[1]!.sha256);
  const good = store.objects.get(key)!;
  const reason = (r: string) => (e: unknown) => e instanceof ForkdError && e.code === 'INTERNAL' && e.details?.reason === r;

  const flipped = Uint8Array.from(good);
  flipped[100] = flipped[100]! ^ 1;
  store.objects.set(key, flipped);
  await assert.rejects(readAll(store, object), reason('corrupt'));
  store.objects.set(key, good.subarray(0, good.length - 1));
  await assert.rejects(readAll(store, object), reason('corrupt'));
  store.objects.delete(key);
  await assert.rejects(readAll(store, object), reason('chunk-missing'));
  store.objects.set(key, good);
  assert.deepEqual(await readAll(store, object), data);
  await assert.rejects(readAll(store, { ...object, sha256: sha(new Uint8Array(1)) }), reason('corrupt'));
});

test('ChunkedObjectSchema: a manifest read back is validated', () => {
  const h = sha(new Uint8Array(0));
  assert.ok(ChunkedObjectSchema.safeParse({ size: 0, sha256: h, chunks: [] }).success);
  assert.ok(ChunkedObjectSchema.safeParse({ size: 3, sha256: h, chunks: [{ sha256: h, size: 1 }, { sha256: h, size: 2 }] }).success);
  for (const bad of [
    { size: 4, sha256: h, chunks: [{ sha256: h, size: 3 }] },
    { size: 0, sha256: h.toUpperCase(), chunks: [] },
    { size: -1, sha256: h, chunks: [] },
    { size: 1, sha256: h, chunks: [{ sha256: '../../etc/passwd', size: 1 }] },
    { size: 0, sha256: h, chunks: [{ sha256: h, size: 0 }] },
    { size: 1.5, sha256: h, chunks: [] },
    { sha256: h, chunks: [] },
    null,
  ]) {
    assert.equal(ChunkedObjectSchema.safeParse(bad).success, false, JSON.stringify(bad));
  }
});

test('chunked round trip (property): any bytes in any pieces, small chunk sizes', async () => {
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 5000 }), fc.integer({ min: 1, max: 900 }), async (data, piece) => {
      const store = new CountingStore();
      const w = await writeChunked(store, pieces(data, piece), { cdc: { min: 64, avg: 256, max: 1024 } });
      assert.equal(w.object.size, data.length);
      assert.ok(ChunkedObjectSchema.safeParse(w.object).success);
      assert.deepEqual(await readAll(store, w.object), Buffer.from(data));
    }),
    { numRuns: 150 },
  );
});
