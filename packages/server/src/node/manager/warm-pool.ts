import type { Logger } from '../../shared/logger.js';

export interface WarmPoolDeps {
  /** Starts a ready sandbox of a template (by name) with default limits; returns its id and the id of the template it runs. */
  start(template: string): Promise<PoolMember>;
  destroy(id: string): Promise<void>;
  /** Whether a template may get members when wanted (a build's own staged templates may not). */
  keeps(template: string): boolean;
  logger: Logger;
}

export interface PoolMember {
  id: string;
  templateId: string;
}

/** What the pool keeps: `size` members of each `always` template, one of each of the `recent` most recently wanted others. */
export interface WarmPoolShape {
  size: number;
  always: readonly string[];
  recent: number;
}

/**
 * A few sandboxes started ahead of demand, so `create` only has to adopt one
 * (runc start, or a warm template's restore, dominates a cold create). They
 * have no record in the store: a crash leaves them as orphans that recovery
 * removes. Refilling runs one at a time in the background, to leave the
 * host's cores to real work. Besides `base`, the templates most recently
 * built or asked for get one member each (a template just built, or one a
 * create missed), so their next create adopts instead of restoring.
 */
export class WarmPool {
  readonly #d: WarmPoolDeps;
  readonly #shape: WarmPoolShape;
  /** Other templates wanted, most recent first. */
  #recent: string[] = [];
  /** By template name; each member remembers the template (id) it was started from. */
  readonly #ready = new Map<string, PoolMember[]>();
  #filling: Promise<void> | undefined;
  #closed = false;

  constructor(deps: WarmPoolDeps, shape: WarmPoolShape) {
    this.#d = deps;
    this.#shape = shape;
  }

  /**
   * A member of exactly this template: members started from an earlier
   * template of the name (deleted, or rebuilt since) are destroyed, never
   * handed out (their root is that template's files).
   */
  take(template: { name: string; id: string }): string | undefined {
    const members = this.#ready.get(template.name) ?? [];
    const [current, stale] = [members.filter((m) => m.templateId === template.id), members.filter((m) => m.templateId !== template.id)];
    this.#ready.set(template.name, current);
    this.#destroy(stale);
    const id = current.shift()?.id;
    this.want(template.name);
    return id;
  }

  /** Keeps a member of `name` from now on (one of the `recent` most recently wanted), and refills. */
  want(name: string): void {
    if (this.#shape.size <= 0 || !this.#d.keeps(name)) return;
    if (!this.#shape.always.includes(name) && this.#shape.recent > 0) {
      this.#recent = [name, ...this.#recent.filter((t) => t !== name)];
      for (const dropped of this.#recent.splice(this.#shape.recent)) this.forget(dropped);
    }
    this.fill();
  }

  /** Stops keeping members of `name` (deleted, or pushed out by others) and destroys those it has. */
  forget(name: string): void {
    this.#recent = this.#recent.filter((t) => t !== name);
    this.#destroy(this.#ready.get(name) ?? []);
    this.#ready.delete(name);
  }

  #destroy(members: readonly PoolMember[]): void {
    for (const m of members) void this.#d.destroy(m.id).catch((err: unknown) => this.#d.logger.warn('warm sandbox not removed', { sandbox: m.id, error: String(err) }));
  }

  /** Ids currently held by the pool (not user sandboxes). */
  held(): Set<string> {
    return new Set([...this.#ready.values()].flat().map((m) => m.id));
  }

  #next(): string | undefined {
    const short = (t: string, n: number) => (this.#ready.get(t)?.length ?? 0) < n;
    return this.#shape.always.find((t) => short(t, this.#shape.size)) ?? this.#recent.find((t) => short(t, 1));
  }

  fill(): void {
    if (this.#filling || this.#closed || this.#shape.size <= 0) return;
    // Cleared in a callback, never inside the loop: a loop with nothing to do ends before the assignment (settled() then spun forever).
    this.#filling = this.#refill().finally(() => {
      this.#filling = undefined;
    });
  }

  async #refill(): Promise<void> {
    for (;;) {
      const t = this.#next();
      if (!t || this.#closed) return;
      let member: PoolMember;
      try {
        member = await this.#d.start(t);
      } catch (err) {
        this.#d.logger.warn('warm pool refill failed', { template: t, error: (err as Error).message });
        // An always-kept template is tried again at the next take; another (deleted meanwhile) is no longer wanted.
        if (this.#shape.always.includes(t)) return;
        this.forget(t);
        continue;
      }
      // Forgotten or closed while it started: not kept.
      if (this.#closed || !(this.#shape.always.includes(t) || this.#recent.includes(t))) {
        await this.#d.destroy(member.id).catch(() => {});
        if (this.#closed) return;
        continue;
      }
      const list = this.#ready.get(t) ?? [];
      list.push(member);
      this.#ready.set(t, list);
    }
  }

  /** Resolves once the pool is full (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.#filling) await this.#filling;
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#filling;
    const ids = [...this.held()];
    this.#ready.clear();
    await Promise.all(ids.map((id) => this.#d.destroy(id).catch(() => {})));
  }
}
