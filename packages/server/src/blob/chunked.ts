import { createHash } from 'node:crypto';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from './blob-store.js';
import { assertBlobPrefix } from './blob-key.js';
import { Chunker, DEFAULT_CDC, type CdcParams } from './cdc.js';
import type { ChunkedObject } from './chunked-object.js';

export type { ChunkedObject } from './chunked-object.js';
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

/** Where a chunk with this sha256 lives. */
export function chunkKey(sha256: string, prefix = ''): string {
  return `${prefix}chunks/${sha256}`;
}

/**
 * Splits `source` into content-defined chunks and stores each under its
 * sha256 unless the store has it, so a second export of mostly unchanged
 * bytes stores little, and a retried export stores only what the failed one
 * did not. Every chunk is in the store when this resolves: write whatever
 * refers to the returned object (a manifest) only then.
 */
export async function writeChunked(store: BlobStore, source: AsyncIterable<Uint8Array>, opts: WriteChunkedOptions = {}): Promise<ChunkedWrite> {
  const prefix = opts.prefix ?? '';
  assertBlobPrefix(prefix);
  const limit = Math.max(1, opts.concurrency ?? 4);
  const chunker = new Chunker(opts.cdc ?? DEFAULT_CDC);
  const whole = createHash('sha256');
  const chunks: ChunkedObject['chunks'] = [];
  const seen = new Set<string>();
  const inFlight = new Set<Promise<void>>();
  let failure: { err: unknown } | undefined;
  let size = 0;
  let bytesUploaded = 0;
  let chunksUploaded = 0;

  const store1 = async (sha256: string, data: Uint8Array): Promise<void> => {
    const key = chunkKey(sha256, prefix);
    if (await store.has(key)) return;
    await store.put(key, data);
    bytesUploaded += data.length;
    chunksUploaded++;
  };
  const add = async (data: Uint8Array): Promise<void> => {
    const sha256 = createHash('sha256').update(data).digest('hex');
    chunks.push({ sha256, size: data.length });
    size += data.length;
    if (seen.has(sha256)) return;
    seen.add(sha256);
    while (inFlight.size >= limit) await Promise.race(inFlight);
    if (failure) throw failure.err;
    const p: Promise<void> = store1(sha256, data).then(
      () => void inFlight.delete(p),
      (err: unknown) => {
        inFlight.delete(p);
        failure ??= { err };
      },
    );
    inFlight.add(p);
  };

  try {
    for await (const piece of source) {
      whole.update(piece);
      for (const c of chunker.push(piece)) await add(c);
    }
    const last = chunker.end();
    if (last) await add(last);
  } finally {
    // Never leave a put running past the call, failed or not.
    await Promise.all(inFlight);
  }
  if (failure) throw failure.err;
  return { object: { size, sha256: whole.digest('hex'), chunks }, bytesUploaded, chunksUploaded };
}

/**
 * The bytes of a chunked object, chunk by chunk, each checked against its
 * sha256 and size and the whole against the object's. A missing or damaged
 * chunk is an INTERNAL error (details.reason `chunk-missing` or `corrupt`):
 * the store lost data; what was yielded before it must be discarded.
 * Fetches one chunk ahead, so memory stays at about two chunks.
 */
export async function* readChunked(store: BlobStore, obj: ChunkedObject, opts: ChunkedOptions = {}): AsyncIterable<Uint8Array> {
  const prefix = opts.prefix ?? '';
  assertBlobPrefix(prefix);
  const whole = createHash('sha256');
  let size = 0;
  const fetch = (i: number) => {
    const c = obj.chunks[i];
    if (!c) return undefined;
    const p = store.get(chunkKey(c.sha256, prefix));
    p.catch(() => {}); // awaited below; not an unhandled rejection while the consumer is slow
    return p;
  };
  let next = fetch(0);
  for (let i = 0; i < obj.chunks.length; i++) {
    const c = obj.chunks[i]!;
    const data = await next!;
    next = fetch(i + 1);
    const key = chunkKey(c.sha256, prefix);
    if (!data) throw dataLoss('chunk-missing', `chunk ${key} is missing from ${store.describe()}`, key);
    if (data.length !== c.size || createHash('sha256').update(data).digest('hex') !== c.sha256) {
      throw dataLoss('corrupt', `chunk ${key} in ${store.describe()} does not match its checksum`, key);
    }
    whole.update(data);
    size += data.length;
    yield data;
  }
  if (size !== obj.size || whole.digest('hex') !== obj.sha256) throw dataLoss('corrupt', `chunked object ${obj.sha256} does not match its checksum`, obj.sha256);
}

function dataLoss(reason: 'chunk-missing' | 'corrupt', message: string, key: string): ForkdError {
  // The closed code list has no DATA_LOSS: the store lost what forkd wrote, a server-side fault.
  return new ForkdError('INTERNAL', message, { reason, key });
}
