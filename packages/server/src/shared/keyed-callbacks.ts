/**
 * Callbacks by key (a sandbox, an instance): each added with its own
 * removal, all of a key taken at once when what they wait for happens.
 */
export class KeyedCallbacks {
  readonly #byKey = new Map<string, Set<() => void>>();

  /** Registers `fn` under `key`; returns its removal. */
  add(key: string, fn: () => void): () => void {
    let set = this.#byKey.get(key);
    if (!set) this.#byKey.set(key, (set = new Set()));
    set.add(fn);
    return () => {
      set.delete(fn);
      if (set.size === 0 && this.#byKey.get(key) === set) this.#byKey.delete(key);
    };
  }

  /** Removes and returns every callback of `key`, in the order added. */
  take(key: string): Array<() => void> {
    const set = this.#byKey.get(key);
    this.#byKey.delete(key);
    return [...(set ?? [])];
  }

  count(key: string): number {
    return this.#byKey.get(key)?.size ?? 0;
  }
}
