import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import type { HelperEnd } from '../../shared/exec.js';
import { KeyedCallbacks } from '../../shared/keyed-callbacks.js';
import { withTimeout } from '../../shared/with-timeout.js';
import { awaitExit, hasExited, liveProcess, type LiveProcess } from './live-process.js';

/** In an instance's CRIU work dir while its pages daemon may run: "PID STARTTIME". */
const MARKER = 'lazy-pages.pid';

/** Why an instance is killed when its pages daemon fails (Runtime.state's cause). */
export const PAGES_LOST = 'its memory could not all be restored: the lazy restore\'s page daemon failed before every page was in, and the pages still out would have read as zeros';

/**
 * A lazily restored tree has all its memory only once its `criu lazy-pages`
 * daemon has pushed every page and exited. Until then the pages not yet in
 * are absent from the tasks' page tables (userfaultfd fetches each on first
 * touch), and a dump reads absent anonymous pages as holes: the snapshot
 * would lose them. Found so: a hibernation right after the resume of a 100 MB
 * sandbox, whose idle process touched nothing, changed its memory's checksum.
 * So every dump of an instance first waits for its pages daemon. That daemon
 * outlives a restart of forkd (LazyDaemons.release), so which one serves an
 * instance is also on file in the instance's work dir, for a daemon that did
 * not start it.
 *
 * A daemon that fails (killed, a UFFDIO_COPY refused) closes the
 * userfaultfd: the kernel unregisters the ranges and every page it never
 * pushed reads as zeros from then on, silently. Such an instance is lost,
 * not damaged: `onLost` kills its tasks (so nothing runs, or is dumped, on
 * zeroed memory) and the exit watches of it fire; its dumps are refused.
 * Only a daemon this process watched from its start says how it ended: one
 * known through the marker after a restart is waited for, its end unknown.
 */
export class LazyPagesWaits {
  readonly #running = new Map<string, Promise<void>>();
  /** Instances known to have no pages daemon: only started() could give one a daemon (and a marker) now. */
  readonly #clear = new Set<string>();
  /** Instances whose pages daemon failed: their tasks being killed, killed, or killed and the loss told to a watch. */
  readonly #lost = new Map<string, 'killing' | 'killed' | 'told'>();
  readonly #lossWatches = new KeyedCallbacks();
  readonly #onLost: (key: string) => Promise<unknown>;

  constructor(onLost: (key: string) => Promise<unknown> = async () => {}) {
    this.#onLost = onLost;
  }

  /** A lazy restore of `key` (work dir `workDir`) runs; `exited` resolves when its pages daemon ends. */
  async started(key: string, workDir: string, daemon: { pid: number; exited: Promise<HelperEnd> }): Promise<void> {
    const marker = join(workDir, MARKER);
    this.#clear.delete(key);
    this.#lost.delete(key);
    const live = await liveProcess(daemon.pid);
    const done: Promise<void> = daemon.exited.then(async (end) => {
      // Not watched to its end (forkd-spawn went): the marker still tells when it ends.
      if (end !== 'unknown') await rm(marker, { force: true }).catch(() => {});
      if (this.#running.get(key) !== done) return;
      this.#running.delete(key);
      if (end === 'clean') this.#clear.add(key);
      if (end === 'failed') await this.#lose(key);
    });
    this.#running.set(key, done);
    // Ended already (its pages all in at once): nothing to wait for, nothing on file.
    if (!live) return;
    await writeFile(marker, `${live.pid} ${live.startTime}\n`, { mode: 0o600 });
    // It may have ended while the marker was written, after its removal.
    if (await hasExited(live)) await rm(marker, { force: true });
  }

  /**
   * Resolves once no pages daemon serves `key` (at once when none does);
   * TIMEOUT past `deadlineMs`; UNAVAILABLE when the daemon failed (the
   * memory is not whole: a dump would keep the zeros).
   */
  async settled(key: string, workDir: string, deadlineMs: number): Promise<void> {
    const known = this.#running.get(key);
    if (known) await withTimeout(known, deadlineMs, () => pagesLate(key, deadlineMs));
    if (this.#lost.has(key)) throw new ForkdError('UNAVAILABLE', `not dumped: ${key} lost its processes (${PAGES_LOST})`);
    if (this.#clear.has(key)) return;
    const marker = join(workDir, MARKER);
    const onFile = parseMarker(await readFile(marker, 'utf8').catch(() => ''));
    if (onFile && !(await awaitExit(onFile, Date.now() + deadlineMs))) throw pagesLate(key, deadlineMs);
    if (onFile) await rm(marker, { force: true });
    this.#clear.add(key);
  }

  /** Whether `key`'s pages daemon failed (its tasks killed for it), until it is restored again or forgotten. */
  lost(key: string): boolean {
    return this.#lost.has(key);
  }

  /** Calls `fn` once when `key` is lost to its pages daemon's failure, after its tasks were killed; returns the stop. */
  watchLoss(key: string, fn: () => void): () => void {
    // Lost and killed before any watch began (one is set after a resume answers, the loss may come first): told
    // once, to the first that comes. Not again: a watcher that looks, finds the tree not yet reaped and watches
    // anew would be told at once, for ever (a busy loop until the kernel lets go of the last task).
    if (this.#lost.get(key) === 'killed') {
      let on = true;
      queueMicrotask(() => {
        if (!on || this.#lost.get(key) !== 'killed') return;
        this.#lost.set(key, 'told');
        fn();
      });
      return () => (on = false);
    }
    return this.#lossWatches.add(key, fn);
  }

  /** The instance is gone: nothing of it to wait for (its pages daemon ends with its tasks). */
  forget(key: string): void {
    this.#running.delete(key);
    this.#clear.delete(key);
    this.#lost.delete(key);
  }

  async #lose(key: string): Promise<void> {
    this.#lost.set(key, 'killing');
    await this.#onLost(key).catch(() => {});
    // Restored again or forgotten meanwhile: nothing to tell.
    if (!this.#lost.has(key)) return;
    const watches = this.#lossWatches.take(key);
    this.#lost.set(key, watches.length ? 'told' : 'killed');
    for (const fn of watches) fn();
  }
}

export function parseMarker(text: string): LiveProcess | undefined {
  const m = /^(\d{1,10}) (\d{1,20})\n?$/.exec(text);
  if (!m) return undefined;
  const pid = Number(m[1]);
  return Number.isSafeInteger(pid) && pid > 0 ? { pid, startTime: m[2]! } : undefined;
}

function pagesLate(key: string, ms: number): ForkdError {
  return new ForkdError('TIMEOUT', `the memory of ${key} was still being restored after ${ms / 1000} s: not dumped, so no page of it is lost`, { timeoutMs: ms });
}
