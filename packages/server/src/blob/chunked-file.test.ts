import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import type { BlobStore } from './blob-store.js';
import { CountingBlobStore } from '../testing/counting-blob-store.js';
import { readChunked, writeChunked } from './chunked.js';
import { writeChunkedFile } from './chunked-file.js';
import { pseudoRandom } from '../testing/pseudo-random.js';

const CDC = { min: 1024, avg: 4096, max: 16384 };

async function* once(b: Uint8Array) {
  yield b;
}

async function readAll(store: BlobStore, obj: Parameters<typeof readChunked>[1]): Promise<Buffer> {
  const out: Uint8Array[] = [];
  for await (const c of readChunked(store, obj)) out.push(c);
  return Buffer.concat(out);
}

type Edit = { kind: 'overwrite' | 'insert' | 'delete' | 'append'; at: number; len: number; seed: number };

function applyEdits(base: Uint8Array, edits: Edit[]): Uint8Array {
  let b = Buffer.from(base);
  for (const e of edits) {
    const at = b.length ? e.at % b.length : 0;
    const bytes = pseudoRandom(e.len, e.seed);
    if (e.kind === 'overwrite') b = Buffer.concat([b.subarray(0, at), bytes, b.subarray(Math.min(b.length, at + e.len))]);
    else if (e.kind === 'append') b = Buffer.concat([b, bytes]);
    else if (e.kind === 'insert') b = Buffer.concat([b.subarray(0, at), bytes, b.subarray(at)]);
    else b = Buffer.concat([b.subarray(0, at), b.subarray(Math.min(b.length, at + e.len))]);
  }
  return b;
}

test('writeChunkedFile: with a reference, the chunks are exactly those writeChunked makes, for any edits, and read back to the file', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-chunked-file-'));
  try {
    const edit = fc.record({ kind: fc.constantFrom('overwrite' as const, 'insert' as const, 'delete' as const, 'append' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 20000 }), seed: fc.nat() });
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 200_000 }), fc.nat(), fc.array(edit, { maxLength: 4 }), async (n, seed, edits) => {
        const store = new CountingBlobStore();
        const base = pseudoRandom(n, seed);
        const next = applyEdits(base, edits);
        await writeFile(join(dir, 'ref'), base);
        await writeFile(join(dir, 'new'), next);
        const ref = await writeChunked(store, once(base), { cdc: CDC });
        const plain = await writeChunked(new CountingBlobStore(), once(next), { cdc: CDC });
        const guided = await writeChunkedFile(store, join(dir, 'new'), { cdc: CDC, reference: { path: join(dir, 'ref'), object: ref.object } });
        assert.deepEqual(guided.object, plain.object);
        assert.deepEqual(await readAll(store, guided.object), next);
      }),
      { numRuns: 60 },
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('writeChunkedFile: the same file again stores nothing; a reference chunk gone from the store fails the write', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-chunked-file-'));
  try {
    const store = new CountingBlobStore();
    const data = pseudoRandom(300_000, 3);
    await writeFile(join(dir, 'f'), data);
    const ref = await writeChunkedFile(store, join(dir, 'f'), { cdc: CDC });
    const puts = store.puts;
    const again = await writeChunkedFile(store, join(dir, 'f'), { cdc: CDC, reference: { path: join(dir, 'f'), object: ref.object } });
    assert.equal(store.puts, puts);
    assert.equal(again.bytesUploaded, 0);
    assert.deepEqual(again.object, ref.object);
    store.objects.delete([...store.objects.keys()][2]!);
    await assert.rejects(writeChunkedFile(store, join(dir, 'f'), { cdc: CDC, reference: { path: join(dir, 'f'), object: ref.object } }), /no longer in memory/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('writeChunkedFile: a file of many read pieces, changed in places, reads back byte for byte', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-chunked-file-'));
  try {
    const store = new CountingBlobStore();
    const base = pseudoRandom(5 << 20, 8);
    const next = applyEdits(base, [{ kind: 'overwrite', at: 1_500_000, len: 30_000, seed: 1 }, { kind: 'insert', at: 3_000_000, len: 5000, seed: 2 }]);
    await writeFile(join(dir, 'ref'), base);
    await writeFile(join(dir, 'new'), next);
    const ref = await writeChunkedFile(store, join(dir, 'ref'), { cdc: CDC });
    const guided = await writeChunkedFile(store, join(dir, 'new'), { cdc: CDC, reference: { path: join(dir, 'ref'), object: ref.object } });
    assert.deepEqual(await readAll(store, guided.object), next);
    assert.deepEqual(guided.object, (await writeChunked(new CountingBlobStore(), once(next), { cdc: CDC })).object);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
