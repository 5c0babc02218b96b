import { webcrypto } from 'node:crypto';
import type { BlobStore } from './blob-store.js';
import type { ChunkedObject } from './chunked-object.js';

/** Where a chunk with this sha256 lives. */
export function chunkKey(sha256: string, prefix = ''): string {
  return `${prefix}chunks/${sha256}`;
}

/** A chunk's sha256, computed on libuv's thread pool so chunking and I/O on the main thread go on meanwhile. */
export async function digestHex(data: Uint8Array): Promise<string> {
  return Buffer.from(await webcrypto.subtle.digest('SHA-256', data)).toString('hex');
}

export type ChunkRef = ChunkedObject['chunks'][number];

/**
 * The chunk list of one object being written: chunks are added in order,
 * hashed and stored (unless the store has them) up to `limit` at once; a
 * chunk known to be in the store already is listed as it is. `finish`
 * waits for every store call and rethrows the first failure; after a
 * failure `add` throws too, so the producer stops early.
 */
export class ChunkWriter {
  readonly chunks: ChunkRef[] = [];
  size = 0;
  bytesUploaded = 0;
  chunksUploaded = 0;
  // One store call per distinct chunk, even when two copies are hashed at once (zero pages).
  private readonly stored = new Map<string, Promise<void>>();
  private readonly inFlight = new Set<Promise<void>>();
  private failure: { err: unknown } | undefined;

  constructor(
    private readonly store: BlobStore,
    private readonly prefix: string,
    private readonly limit: number,
  ) {}

  /** A chunk whose bytes are `data` (the writer may keep it until it is stored). */
  async add(data: Uint8Array): Promise<void> {
    const index = this.chunks.length;
    this.chunks.push({ sha256: '', size: data.length });
    this.size += data.length;
    await this.run(async () => {
      const sha256 = await digestHex(data);
      this.chunks[index] = { sha256, size: data.length };
      await this.storeOnce(sha256, () => this.put(sha256, data));
    });
  }

  /** A chunk the caller knows by its sha256; only checked to be in the store. */
  async addKnown(c: ChunkRef): Promise<void> {
    this.chunks.push({ ...c });
    this.size += c.size;
    await this.run(() => this.storeOnce(c.sha256, async () => {
      if (!(await this.store.has(chunkKey(c.sha256, this.prefix)))) throw new Error(`chunk ${c.sha256} is no longer in ${this.store.describe()}`);
    }));
  }

  /** Waits for every store call; rethrows the first failure. */
  async finish(): Promise<void> {
    await Promise.all(this.inFlight);
    if (this.failure) throw this.failure.err;
  }

  private async run(fn: () => Promise<void>): Promise<void> {
    while (this.inFlight.size >= this.limit) await Promise.race(this.inFlight);
    if (this.failure) throw this.failure.err;
    const p: Promise<void> = fn().then(
      () => void this.inFlight.delete(p),
      (err: unknown) => {
        this.inFlight.delete(p);
        this.failure ??= { err };
      },
    );
    this.inFlight.add(p);
  }

  private storeOnce(sha256: string, fn: () => Promise<void>): Promise<void> {
    let p = this.stored.get(sha256);
    if (!p) this.stored.set(sha256, (p = fn()));
    return p;
  }

  private async put(sha256: string, data: Uint8Array): Promise<void> {
    const key = chunkKey(sha256, this.prefix);
    if (await this.store.has(key)) return;
    await this.store.put(key, data);
    this.bytesUploaded += data.length;
    this.chunksUploaded++;
  }
}
