import { ReattachGate } from './reattach-gate.js';

/**
 * Lifecycle operations on one sandbox run one at a time, in the order they
 * were asked for: a lock is taken in the caller's turn (nothing awaited
 * before), so an operation asked for after another waits for it.
 *
 * Some operations only know their lock's key after a store read (a fork of a
 * snapshot, a delete or pin of one: the lock is the owner sandbox's). Their
 * place in line is reserved in the caller's turn with `exclusiveOf`: every
 * lock asked for after that waits until the lookup is done and the
 * reservation has taken its lock, so a delete asked for after a fork of one
 * of its sandbox's snapshots still waits for the fork (an awaited lookup
 * between the call and the lock is what broke this once: races.int.test.ts).
 * Lookups are one store read: holding later lock requests back for that
 * long costs nothing noticeable.
 */
export class SandboxLocks {
  readonly #locks = new Map<string, Promise<unknown>>();
  /** Settles when the last reservation made has taken its lock (or failed its lookup). */
  #barrier: Promise<void> = Promise.resolve();
  /** Reservations not yet settled plus requests waiting behind one: while > 0 every new request queues behind the barrier. */
  #waiting = 0;
  /** Streams that lost their guest connection wait here for the sandbox to be reachable again. */
  readonly reattach = new ReattachGate();

  /** Runs `fn` holding the lock of `id`. */
  exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    if (this.#waiting === 0) return this.#run(id, fn);
    this.#waiting++;
    return this.#barrier.then(() => {
      this.#waiting--;
      return this.#run(id, fn);
    });
  }

  /** Like exclusive, with the key still to be looked up; its place in line is taken now (see the class comment). */
  exclusiveOf<T>(lookup: Promise<string>, fn: (id: string) => Promise<T>): Promise<T> {
    const before = this.#barrier;
    let settle!: () => void;
    this.#barrier = new Promise<void>((r) => (settle = r));
    this.#waiting++;
    // A lookup that fails before its turn must not count as unhandled meanwhile.
    lookup.catch(() => {});
    return before.then(async () => {
      let id: string;
      try {
        id = await lookup;
      } catch (err) {
        this.#waiting--;
        settle();
        throw err;
      }
      const p = this.#run(id, () => fn(id));
      this.#waiting--;
      settle();
      return p;
    });
  }

  /** The guest may be out of reach for all of `fn`: client-facing streams wait (see ReattachGate). */
  async away<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const reopen = this.reattach.hold(id);
    try {
      return await fn();
    } finally {
      reopen();
    }
  }

  async #run<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.#locks.set(id, tail);
    try {
      return await next;
    } finally {
      if (this.#locks.get(id) === tail) this.#locks.delete(id);
    }
  }
}
