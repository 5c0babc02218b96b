import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from '../blob/blob-store.js';

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
