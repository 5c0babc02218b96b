import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from '../blob/blob-store.js';

/** An in-memory store that counts calls and can be made to fail (logic tests only; the real stores pass the conformance suite). */
export class CountingBlobStore implements BlobStore {
  readonly objects = new Map<string, Uint8Array>();
  puts = 0;
  active = 0;
  maxActive = 0;
  failPutsAfter = Infinity;
  async put(key: string, data: Uint8Array): Promise<void> {
    if (this.puts >= this.failPutsAfter) throw new ForkdError('UNAVAILABLE', 'store down');
    this.puts++;
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    await new Promise((r) => setTimeout(r, 1));
    this.active--;
    this.objects.set(key, Uint8Array.from(data));
  }
  async get(key: string) {
    return this.objects.get(key);
  }
  async has(key: string) {
    return this.objects.has(key);
  }
  async *list(prefix: string) {
    yield* [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort();
  }
  async delete(key: string) {
    this.objects.delete(key);
  }
  describe() {
    return 'memory';
  }
}
