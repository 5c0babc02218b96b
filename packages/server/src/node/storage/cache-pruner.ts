import type { Logger } from '../../shared/logger.js';

/** A cache whose unused entries can be removed (StepCache, ImageVolumes). */
export interface Prunable {
  prune(maxAgeMs: number): Promise<{ removed: string[]; failed: number }>;
}

const DAY_MS = 86_400_000;
/** Often enough that an entry outlives its age by a few hours at most; each prune lists two directories. */
const EVERY_MS = 6 * 3_600_000;

/**
 * Prunes the build caches (Dockerfile steps, image layers) of entries unused
 * for `days` (FORKD_BUILD_CACHE_DAYS) soon after start and every six
 * hours, as BuildKit's garbage collection does; 0 days keeps everything.
 */
export class CachePruner {
  readonly #caches: Record<string, Prunable>;
  readonly #maxAgeMs: number;
  readonly #logger: Pick<Logger, 'info' | 'warn'>;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(caches: Record<string, Prunable>, days: number, logger: Pick<Logger, 'info' | 'warn'>) {
    this.#caches = caches;
    this.#maxAgeMs = days * DAY_MS;
    this.#logger = logger;
  }

  start(firstAfterMs = 60_000): void {
    if (this.#maxAgeMs <= 0 || this.#timer) return;
    const next = (ms: number): void => {
      this.#timer = setTimeout(() => {
        this.#running = this.run().finally(() => {
          this.#running = undefined;
          if (this.#timer) next(EVERY_MS);
        });
      }, ms);
      this.#timer.unref();
    };
    next(firstAfterMs);
  }

  /** One prune of every cache; failures are logged, never thrown. */
  async run(): Promise<void> {
    for (const [name, cache] of Object.entries(this.#caches)) {
      try {
        const r = await cache.prune(this.#maxAgeMs);
        if (r.removed.length || r.failed) this.#logger.info('build cache pruned', { cache: name, removed: r.removed.length, failed: r.failed });
      } catch (err) {
        this.#logger.warn('pruning a build cache failed', { cache: name, error: String(err) });
      }
    }
  }

  async stop(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
