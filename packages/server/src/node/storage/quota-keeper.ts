import type { Logger } from '../../shared/logger.js';
import { exec } from '../../shared/exec.js';
import { quotasInconsistent } from './quota-mode.js';

/**
 * Keeps qgroup numbers meaningful. When the cleaner finishes dropping a
 * deleted subvolume that shared extents (a sandbox root and its snapshots,
 * forks), Linux ≥ 6.10 may find the subvolume's qgroup still non-zero,
 * remove it anyway and mark all numbers inconsistent ("to be deleted qgroup
 * has non-zero numbers"); from then on limits are checked against stale
 * numbers until a rescan. This polls the flag (one sysfs read) and starts a
 * rescan when it is set, so quotas are off for at most the poll interval
 * plus the rescan (~0.3 s for a 1.5 GB pool). Full qgroups only: simple
 * quotas are never inconsistent and cannot be rescanned (EINVAL).
 */
export class QuotaKeeper {
  readonly #pool: string;
  readonly #logger: Logger;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;

  constructor(pool: string, logger: Logger) {
    this.#pool = pool;
    this.#logger = logger;
  }

  start(intervalMs = 2000): void {
    this.#timer ??= setInterval(() => void this.check(), intervalMs);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }

  /** Rescans (and waits for it) if the numbers are inconsistent; resolves with whether it did. */
  check(): Promise<boolean> {
    if (this.#running) return this.#running.then(() => true);
    const p = (async () => {
      if (!(await quotasInconsistent(this.#pool))) return false;
      const t0 = performance.now();
      await exec('btrfs', ['quota', 'rescan', this.#pool], { allowFailure: true });
      await exec('btrfs', ['quota', 'rescan', '-w', this.#pool], { allowFailure: true });
      this.#logger.info('qgroup numbers were inconsistent after a subvolume drop: rescanned', { ms: Math.round(performance.now() - t0) });
      return true;
    })();
    this.#running = p.then(
      () => undefined,
      (err: unknown) => this.#logger.warn('qgroup rescan failed', { error: String(err) }),
    );
    void this.#running.finally(() => (this.#running = undefined));
    return p.catch(() => false);
  }
}
