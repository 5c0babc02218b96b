import type { Logger } from '../../shared/logger.js';

export interface WarmPoolDeps {
  /** Starts a ready sandbox of a template with default limits; returns its id. */
  start(template: string): Promise<string>;
  destroy(id: string): Promise<void>;
  logger: Logger;
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
  readonly #ready = new Map<string, string[]>();
  #filling: Promise<void> | undefined;
  #closed = false;

  constructor(deps: WarmPoolDeps, size: number, templates: string[]) {
    this.#d = deps;
    this.#size = size;
    this.#templates = templates;
  }

  take(template: string): string | undefined {
    const id = this.#ready.get(template)?.shift();
    this.fill();
    return id;
  }

  /** Ids currently held by the pool (not user sandboxes). */
  held(): Set<string> {
    return new Set([...this.#ready.values()].flat());
  }

  fill(): void {
    if (this.#filling || this.#closed || this.#size <= 0) return;
    this.#filling = (async () => {
      try {
        for (;;) {
          const t = this.#templates.find((x) => (this.#ready.get(x)?.length ?? 0) < this.#size);
          if (!t || this.#closed) return;
          let id: string;
          try {
            id = await this.#d.start(t);
          } catch (err) {
            this.#d.logger.warn('warm pool refill failed', { template: t, error: (err as Error).message });
            return;
          }
          if (this.#closed) {
            await this.#d.destroy(id).catch(() => {});
            return;
          }
          const list = this.#ready.get(t) ?? [];
          list.push(id);
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
