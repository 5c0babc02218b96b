import { spawnDaemon } from '../../shared/exec.js';
import { waitForPath } from '../../shared/wait-for-path.js';

/**
 * The helper daemons a lazy restore runs beside runc (`criu lazy-pages`, the
 * userfaultfd broker): started, waited for until they listen, killed.
 */

/** How long a `criu lazy-pages` daemon may take to listen (~10 ms idle) before the restore goes eager. */
const LAZY_PAGES_START_MS = 10_000;

/**
 * A helper daemon that listens on `sock` once ready: `listening` says whether
 * it did within LAZY_PAGES_START_MS (false at once if it exits first).
 */
export function listeningDaemon(sock: string, file: string, args: string[]): { pid: number; listening: Promise<boolean> } {
  let exited!: () => void;
  const gone = new Promise<void>((r) => (exited = r));
  const pid = spawnDaemon(file, args, process.env, () => exited());
  return { pid, listening: waitForPath(sock, LAZY_PAGES_START_MS, gone) };
}

/** The lazy-pages daemon exits by itself once the restore fails; it may already be gone. */
export function killQuietly(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    /* already exited */
  }
}
