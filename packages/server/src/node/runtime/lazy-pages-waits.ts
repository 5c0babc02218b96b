import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { withTimeout } from '../../shared/with-timeout.js';
import { awaitExit, hasExited, liveProcess, type LiveProcess } from './live-process.js';

/** In an instance's CRIU work dir while its pages daemon may run: "PID STARTTIME". */
const MARKER = 'lazy-pages.pid';

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
 */
export class LazyPagesWaits {
  readonly #running = new Map<string, Promise<void>>();
  /** Instances known to have no pages daemon: only started() could give one a daemon (and a marker) now. */
  readonly #clear = new Set<string>();

  /** A lazy restore of `key` (work dir `workDir`) runs; `exited` resolves when its pages daemon ends. */
  async started(key: string, workDir: string, daemon: { pid: number; exited: Promise<void> }): Promise<void> {
    const marker = join(workDir, MARKER);
    this.#clear.delete(key);
    const live = await liveProcess(daemon.pid);
    const done: Promise<void> = daemon.exited
      .then(() => rm(marker, { force: true }))
      .catch(() => {})
      .then(() => {
        if (this.#running.get(key) !== done) return;
        this.#running.delete(key);
        this.#clear.add(key);
      });
    this.#running.set(key, done);
    // Ended already (its pages all in at once): nothing to wait for, nothing on file.
    if (!live) return;
    await writeFile(marker, `${live.pid} ${live.startTime}\n`, { mode: 0o600 });
    // It may have ended while the marker was written, after its removal.
    if (await hasExited(live)) await rm(marker, { force: true });
  }

  /** Resolves once no pages daemon serves `key` (at once when none does); TIMEOUT past `deadlineMs`. */
  async settled(key: string, workDir: string, deadlineMs: number): Promise<void> {
    const known = this.#running.get(key);
    if (known) return withTimeout(known, deadlineMs, () => pagesLate(key, deadlineMs));
    if (this.#clear.has(key)) return;
    const marker = join(workDir, MARKER);
    const onFile = parseMarker(await readFile(marker, 'utf8').catch(() => ''));
    if (onFile && !(await awaitExit(onFile, Date.now() + deadlineMs))) throw pagesLate(key, deadlineMs);
    if (onFile) await rm(marker, { force: true });
    this.#clear.add(key);
  }

  /** The instance is gone: nothing of it to wait for (its pages daemon ends with its tasks). */
  forget(key: string): void {
    this.#running.delete(key);
    this.#clear.delete(key);
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
