/**
 * Token buckets by key (a source address, or one global key): `capacity`
 * tokens, refilled at `perSecond`. Buckets back to full are forgotten and at
 * most `maxKeys` are kept (the fullest-looking, i.e. oldest, go first), so a
 * flood of sources cannot grow the daemon's memory.
 */
export class KeyedBuckets {
  readonly #capacity: number;
  readonly #perMs: number;
  readonly #maxKeys: number;
  readonly #now: () => number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(opts: { capacity: number; perSecond: number; maxKeys?: number; now?: () => number }) {
    this.#capacity = opts.capacity;
    this.#perMs = opts.perSecond / 1000;
    this.#maxKeys = opts.maxKeys ?? 10_000;
    this.#now = opts.now ?? Date.now;
  }

  #level(key: string): { tokens: number; at: number } {
    const now = this.#now();
    const b = this.#buckets.get(key);
    if (!b) return { tokens: this.#capacity, at: now };
    return { tokens: Math.min(this.#capacity, b.tokens + (now - b.at) * this.#perMs), at: now };
  }

  /** Milliseconds until `key` has a token again (0: it has one now). */
  waitMs(key: string): number {
    const { tokens } = this.#level(key);
    return tokens >= 1 ? 0 : Math.ceil((1 - tokens) / this.#perMs);
  }

  /** Takes a token if there is one; returns whether it did. */
  take(key: string): boolean {
    const b = this.#level(key);
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    this.#buckets.delete(key);
    this.#buckets.set(key, b);
    this.#sweep();
    return true;
  }

  /** Takes a token even when there is none left (the level goes negative: a penalty that must refill first). */
  spend(key: string): void {
    const b = this.#level(key);
    b.tokens = Math.max(b.tokens - 1, -this.#capacity);
    this.#buckets.delete(key);
    this.#buckets.set(key, b);
    this.#sweep();
  }

  #sweep(): void {
    if (this.#buckets.size <= this.#maxKeys) return;
    // Map order is least recently touched first.
    for (const k of this.#buckets.keys()) {
      if (this.#buckets.size <= this.#maxKeys) break;
      this.#buckets.delete(k);
    }
  }
}
