import type { Logger } from '../../shared/logger.js';
import { exec } from '../../shared/exec.js';
import { QGROUP_TOOL } from './disk-quota.js';

/** After the last removal: long enough for the cleaner to drop what was removed (its groups count nothing only then). */
const SWEEP_DELAY_MS = 60_000;

/**
 * Simple quotas: removes the lineage groups that count nothing (see
 * forkd-qgroup sweep) a while after subvolumes are removed, not only at the
 * daemon's start, so a long-running daemon that creates and deletes
 * sandboxes does not pile them up. One sweep walks every level-1 group: it
 * runs at most once per SWEEP_DELAY_MS, and only after removals.
 */
export class LineageSweeper {
  readonly #pool: string;
  readonly #logger: Pick<Logger, 'warn'>;
  readonly #delayMs: number;
  #timer: NodeJS.Timeout | undefined;
  #running: Promise<void> | undefined;
  #stopped = false;

  constructor(pool: string, logger: Pick<Logger, 'warn'>, delayMs = SWEEP_DELAY_MS) {
    this.#pool = pool;
    this.#logger = logger;
    this.#delayMs = delayMs;
  }

  /** A subvolume was removed: a sweep follows (one for any number of removals meanwhile). */
  removed(): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#running = this.sweep().then(() => {
        this.#running = undefined;
      });
    }, this.#delayMs);
    this.#timer.unref();
  }

  /** Sweeps now; resolves with how many groups went. */
  async sweep(): Promise<number> {
    const r = await exec(QGROUP_TOOL, ['sweep', this.#pool], { allowFailure: true }).catch((err: unknown) => ({ code: -1, stdout: '', stderr: String(err) }));
    if (r.code !== 0) this.#logger.warn('sweeping empty lineage groups failed', { stderrTail: r.stderr.slice(-500) });
    return Number(r.stdout.trim()) || 0;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#running;
  }
}
