import type { Logger } from '../../shared/logger.js';

export interface WarmPoolDeps {
  /** Starts a ready sandbox of a template (by name) with default limits; returns its id and the id of the template it runs. */
  start(template: string): Promise<PoolMember>;
  destroy(id: string): Promise<void>;
  logger: Logger;
}

export interface PoolMember {
  id: string;
  templateId: string;
}

/**
 * A few sandboxes started ahead of demand, so `create` only has to adopt one
 * (runc start dominates a cold create). They have no record in the store: a
 * crash leaves them as orphans that recovery removes. Refilling runs one at a
 * time in the background, to leave the host's cores to real work.
 */
export class WarmPool {
  readonly #d: WarmPoolDeps;
  readonly #size: number;
  readonly #templates: string[];
  /** By template name; each member remembers the template (id) it was started from. */
  readonly #ready = new Map<string, PoolMember[]>();
  #filling: Promise<void> | undefined;
  #closed = false;

  constructor(deps: WarmPoolDeps, size: number, templates: string[]) {
    this.#d = deps;
    this.#size = size;
    this.#templates = templates;
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
    for (const m of stale) void this.#d.destroy(m.id).catch((err: unknown) => this.#d.logger.warn('stale warm sandbox not removed', { sandbox: m.id, error: String(err) }));
    const id = current.shift()?.id;
    this.fill();
    return id;
  }

  /** Ids currently held by the pool (not user sandboxes). */
  held(): Set<string> {
    return new Set([...this.#ready.values()].flat().map((m) => m.id));
  }

  fill(): void {
    if (this.#filling || this.#closed || this.#size <= 0) return;
    this.#filling = (async () => {
      try {
        for (;;) {
          const t = this.#templates.find((x) => (this.#ready.get(x)?.length ?? 0) < this.#size);
          if (!t || this.#closed) return;
          let member: PoolMember;
          try {
            member = await this.#d.start(t);
          } catch (err) {
            this.#d.logger.warn('warm pool refill failed', { template: t, error: (err as Error).message });
            return;
          }
          if (this.#closed) {
            await this.#d.destroy(member.id).catch(() => {});
            return;
          }
          const list = this.#ready.get(t) ?? [];
          list.push(member);
          this.#ready.set(t, list);
        }
      } finally {
        this.#filling = undefined;
      }
    })();
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
