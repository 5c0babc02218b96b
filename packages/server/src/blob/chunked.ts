import { createHash } from 'node:crypto';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from './blob-store.js';
import { assertBlobPrefix } from './blob-key.js';
import { Chunker, DEFAULT_CDC, type CdcParams } from './cdc.js';
import type { ChunkedObject } from './chunked-object.js';
import { chunkKey, ChunkWriter, digestHex, type ChunkRef } from './chunk-writer.js';

export type { ChunkedObject } from './chunked-object.js';
export { chunkKey } from './chunk-writer.js';
export { ChunkedObjectSchema } from './chunked-object.js';

export interface ChunkedWrite {
  object: ChunkedObject;
  /** Bytes of the chunks this call stored (the rest were in the store already). */
  bytesUploaded: number;
  chunksUploaded: number;
}

export interface ChunkedOptions {
  /** Chunks go under `<prefix>chunks/` (default ''). */
  prefix?: string;
}

export interface WriteChunkedOptions extends ChunkedOptions {
  /** Chunks checked and stored at once (default 4): hides a remote store's latency, bounds memory to about this many largest chunks. */
  concurrency?: number;
  /** The chunker's sizes (tests); the default is DEFAULT_CDC. */
  cdc?: CdcParams;
}

/**
 * The object's identity: the sha256 of its chunk list. Each chunk is checked
 * against its own sha256, so hashing all the bytes a second time as one
 * stream would add nothing but a pass over them.
 */
export function objectDigest(chunks: ChunkedObject['chunks']): string {
  const h = createHash('sha256');
  for (const c of chunks) h.update(`${c.sha256} ${c.size}\n`);
  return h.digest('hex');
}

/**
 * Splits `source` into content-defined chunks and stores each under its
 * sha256 unless the store has it, so a second export of mostly unchanged
 * bytes stores little, and a retried export stores only what the failed one
 * did not. Every chunk is in the store when this resolves: write whatever
 * refers to the returned object (a manifest) only then.
 */
export async function writeChunked(store: BlobStore, source: AsyncIterable<Uint8Array>, opts: WriteChunkedOptions = {}): Promise<ChunkedWrite> {
  const w = writerFor(store, opts);
  const chunker = new Chunker(opts.cdc ?? DEFAULT_CDC);
  try {
    for await (const piece of source) for (const c of chunker.push(piece)) await w.add(c);
    const last = chunker.end();
    if (last) await w.add(last);
  } finally {
    // Never leave a put running past the call, failed or not.
    await w.finish().catch(() => {});
  }
  return written(w);
}

/** A writer for one object under opts' prefix and concurrency. */
export function writerFor(store: BlobStore, opts: WriteChunkedOptions): ChunkWriter {
  const prefix = opts.prefix ?? '';
  assertBlobPrefix(prefix);
  return new ChunkWriter(store, prefix, Math.max(1, opts.concurrency ?? 4));
}

/** What a writer wrote, once every chunk is stored. */
export async function written(w: ChunkWriter): Promise<ChunkedWrite> {
  await w.finish();
  return { object: { size: w.size, sha256: objectDigest(w.chunks), chunks: w.chunks }, bytesUploaded: w.bytesUploaded, chunksUploaded: w.chunksUploaded };
}

/** Chunks fetched and checked ahead of the consumer: hides the store's latency and uses a second core for the hashing. */
const READ_AHEAD = 4;

/**
 * The bytes of a chunked object, chunk by chunk, each checked against its
 * sha256 and size, the chunk list against the object's sha256. A missing or
 * damaged chunk is an INTERNAL error (details.reason `chunk-missing` or
 * `corrupt`): the store lost data; what was yielded before it must be
 * discarded. Memory stays at about READ_AHEAD + 1 chunks.
 */
export async function* readChunked(store: BlobStore, obj: ChunkedObject, opts: ChunkedOptions = {}): AsyncIterable<Uint8Array> {
  assertChunkList(obj);
  yield* readChunks(store, obj.chunks, opts);
}

/** Throws readChunked's `corrupt` error unless the object's sha256 is its chunk list's. */
export function assertChunkList(obj: ChunkedObject): void {
  if (objectDigest(obj.chunks) !== obj.sha256) throw dataLoss('corrupt', `chunked object ${obj.sha256} does not match its chunk list`, obj.sha256);
}

/** Some chunks' bytes, in the order given, each checked as readChunked checks them. */
export async function* readChunks(store: BlobStore, chunks: readonly ChunkRef[], opts: ChunkedOptions = {}): AsyncIterable<Uint8Array> {
  const prefix = opts.prefix ?? '';
  assertBlobPrefix(prefix);
  const fetch = (i: number): Promise<Uint8Array> | undefined => {
    const c = chunks[i];
    if (!c) return undefined;
    const p = checkedChunk(store, c, chunkKey(c.sha256, prefix));
    p.catch(() => {}); // awaited below; not an unhandled rejection while the consumer is slow
    return p;
  };
  const ahead: (Promise<Uint8Array> | undefined)[] = [];
  for (let i = 0; i < READ_AHEAD; i++) ahead.push(fetch(i));
  for (let i = 0; i < chunks.length; i++) {
    const data = await ahead.shift()!;
    ahead.push(fetch(i + READ_AHEAD));
    yield data;
  }
}

async function checkedChunk(store: BlobStore, c: ChunkRef, key: string): Promise<Uint8Array> {
  const data = await store.get(key);
  if (!data) throw dataLoss('chunk-missing', `chunk ${key} is missing from ${store.describe()}`, key);
  if (data.length !== c.size || (await digestHex(data)) !== c.sha256) throw dataLoss('corrupt', `chunk ${key} in ${store.describe()} does not match its checksum`, key);
  return data;
}

function dataLoss(reason: 'chunk-missing' | 'corrupt', message: string, key: string): ForkdError {
  // The closed code list has no DATA_LOSS: the store lost what forkd wrote, a server-side fault.
  return new ForkdError('INTERNAL', message, { reason, key });
}
