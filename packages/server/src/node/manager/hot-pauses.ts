import type { NetworkRules } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';

/** A paused sandbox whose processes are kept frozen, as its pause snapshot left them. */
export interface HotPause {
  /** Runtime key of the frozen instance. */
  key: string;
  /** The pause's snapshot: the frozen tree is exactly its state (memory and files of one instant). */
  snapshot: string;
  since: number;
  /** Its network rules when it froze: a change while paused is applied at the thaw. */
  network?: NetworkRules | undefined;
}

/**
 * A pause is durable the moment its snapshot is recorded; the frozen tree
 * CRIU dumped is then only a cache of that snapshot. Kept for a while
 * (FORKD_HOT_PAUSE_S), a resume is a thaw instead of a restore: the common
 * pause-then-resume of an agent's session costs milliseconds, not a CRIU
 * restore. A frozen tree uses no CPU but keeps its memory, so it is
 * counted by admission like a running sandbox, dropped when its window
 * ends, and dropped first when admission runs out of room (reclaim).
 * Nothing depends on it: a daemon restart, an eviction or a failed thaw
 * leaves the snapshot, and the resume restores from it as before.
 *
 * Drops do not take the sandbox's lock (admission may ask for room while a
 * fork holds it): an entry leaves the map at once, and whoever wants the
 * instance key next awaits the drop in flight (`take`, `forget`).
 */
export class HotPauses {
  readonly #windowMs: number;
  readonly #destroy: (key: string) => Promise<void>;
  readonly #logger: Logger;
  readonly #held = new Map<string, HotPause & { timer: NodeJS.Timeout }>();
  readonly #dropping = new Map<string, Promise<void>>();

  constructor(windowMs: number, destroy: (key: string) => Promise<void>, logger: Logger) {
    this.#windowMs = windowMs;
    this.#destroy = destroy;
    this.#logger = logger;
  }

  get enabled(): boolean {
    return this.#windowMs > 0;
  }

  /** Sandboxes whose frozen processes are held (admission counts them as running). */
  ids(): ReadonlySet<string> {
    return new Set(this.#held.keys());
  }

  /** Holds a frozen instance; false when hot pauses are off (the caller destroys it). */
  keep(id: string, key: string, snapshot: string, network?: NetworkRules): boolean {
    if (!this.enabled) return false;
    const timer = setTimeout(() => void this.drop(id, 'its hot window ended'), this.#windowMs);
    timer.unref();
    this.#held.set(id, { key, snapshot, since: Date.now(), network, timer });
    return true;
  }

  /** The frozen instance of `id`, now the caller's (to thaw or destroy); undefined when none is held. */
  async take(id: string): Promise<HotPause | undefined> {
    await this.#dropping.get(id);
    const h = this.#held.get(id);
    if (!h) return undefined;
    this.#held.delete(id);
    clearTimeout(h.timer);
    return { key: h.key, snapshot: h.snapshot, since: h.since, network: h.network };
  }

  /** Forgets `id` without destroying (its instance is being released by the caller), after any drop in flight. */
  async forget(id: string): Promise<void> {
    const h = this.#held.get(id);
    if (h) clearTimeout(h.timer);
    this.#held.delete(id);
    await this.#dropping.get(id);
  }

  /** Destroys the frozen instance of `id` (the snapshot stays: a resume restores from it). */
  drop(id: string, why: string): Promise<void> {
    const h = this.#held.get(id);
    if (!h) return this.#dropping.get(id) ?? Promise.resolve();
    this.#held.delete(id);
    clearTimeout(h.timer);
    const p = this.#destroy(h.key)
      .then(() => this.#logger.debug('hot pause dropped', { sandbox: id, why }))
      .catch((err: unknown) => this.#logger.warn('hot pause not dropped', { sandbox: id, why, error: String(err) }))
      .finally(() => this.#dropping.delete(id));
    this.#dropping.set(id, p);
    return p;
  }

  /** Drops every held instance, oldest first; resolves with how many there were. */
  async reclaim(why: string): Promise<number> {
    const ids = [...this.#held.entries()].sort((a, b) => a[1].since - b[1].since).map(([id]) => id);
    await Promise.all(ids.map((id) => this.drop(id, why)));
    return ids.length;
  }

  /** Stops the windows' timers (daemon stop): the frozen trees stay for the start-up check (paused records' leftovers). */
  close(): void {
    for (const h of this.#held.values()) clearTimeout(h.timer);
    this.#held.clear();
  }
}
