import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from '../blob/blob-store.js';
import { DirBlobStore } from '../blob/dir-blob-store.js';
import { createTestNode, type TestNode } from './test-node.js';

/** A blob store for transfer tests: another store that can be told to fail its next puts (an export cut short), and counts its gets. */
export class FlakyBlobs implements BlobStore {
  failPutsAfter = Infinity;
  /** Keys stored since the last look. */
  readonly stored = new Set<string>();
  constructor(readonly inner: BlobStore) {}
  async put(key: string, data: Uint8Array): Promise<void> {
    if (this.failPutsAfter-- <= 0) throw new ForkdError('UNAVAILABLE', 'blob store went away');
    await this.inner.put(key, data);
    this.stored.add(key);
  }
  private gets = new Map<string, number>();
  get(key: string): Promise<Uint8Array | undefined> {
    const prefix = key.slice(0, key.indexOf('/') + 1);
    this.gets.set(prefix, (this.gets.get(prefix) ?? 0) + 1);
    return this.inner.get(key);
  }
  /** Gets so far of keys whose first segment is `prefix` (e.g. 'chunks/'). */
  countGets(prefix: string): number {
    return this.gets.get(prefix) ?? 0;
  }
  has(key: string): Promise<boolean> {
    return this.inner.has(key);
  }
  list(prefix: string): AsyncIterable<string> {
    return this.inner.list(prefix);
  }
  delete(key: string): Promise<void> {
    return this.inner.delete(key);
  }
  describe(): string {
    return this.inner.describe();
  }
  async keys(prefix = ''): Promise<string[]> {
    const out: string[] = [];
    for await (const k of this.inner.list(prefix)) out.push(k);
    return out;
  }
}

/** Two test nodes (each with its own pool and `base`) sharing one FlakyBlobs over a temporary directory store; `dispose` removes all of it. */
export interface TransferPair {
  a: TestNode;
  b: TestNode;
  blobs: FlakyBlobs;
  dispose(): Promise<void>;
}

export async function openTransferPair(): Promise<TransferPair> {
  const blobDir = await mkdtemp(join(tmpdir(), 'forkd-blobs-'));
  const blobs = new FlakyBlobs(await DirBlobStore.open(blobDir));
  const a = await createTestNode({ blobs });
  const b = await createTestNode({ blobs });
  const pair: TransferPair = {
    a,
    b,
    blobs,
    async dispose() {
      await pair.a.dispose();
      await pair.b.dispose();
      await rm(blobDir, { recursive: true, force: true });
    },
  };
  return pair;
}

export const MB = 2 ** 20;
export const mb = (n: number): string => `${(n / MB).toFixed(2)} MB`;
export const hasCode = (c: ForkdError['code']) => (e: unknown): boolean => e instanceof ForkdError && e.code === c;
