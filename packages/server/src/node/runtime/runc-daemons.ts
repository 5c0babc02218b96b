import { rm } from 'node:fs/promises';
import { spawnHelperDaemon, type HelperEnd } from '../../shared/exec.js';
import { waitForPath } from '../../shared/wait-for-path.js';

/**
 * The helper daemons a lazy restore runs beside runc (`criu lazy-pages`, the
 * userfaultfd broker): started, waited for until they listen, killed.
 */

/** How long a `criu lazy-pages` daemon may take to listen (~10 ms idle) before the restore goes eager. */
export const LAZY_PAGES_START_MS = 10_000;

/** A helper daemon that listens on `sock` once ready, killed by `kill` unless it already ended. */
interface Listening {
  /** Whether it did within LAZY_PAGES_START_MS (false at once if it exits first). */
  listening: Promise<boolean>;
  /** Its pid (0 when it could not start) and its end. */
  pid: Promise<number>;
  exited: Promise<HelperEnd>;
  kill(): Promise<void>;
  /** It outlives the daemon from now on. */
  release(): void;
}

function listeningDaemon(sock: string, file: string, args: string[]): Listening {
  const d = spawnHelperDaemon(file, args);
  let ended = false;
  void d.exited.then(() => (ended = true));
  return {
    listening: waitForPath(sock, LAZY_PAGES_START_MS, d.exited),
    pid: d.pid,
    exited: d.exited,
    release: d.release,
    async kill() {
      const pid = await d.pid;
      // Only while it runs: the pid of one that ended may be another process's by now.
      if (!pid || ended) return;
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* ended meanwhile (the lazy-pages daemon ends by itself once a restore fails) */
      }
    },
  };
}

/** A lazy restore's daemons, started (see startLazyDaemons). */
export interface LazyDaemons {
  /** The broker's socket (in the images directory), when there is one. */
  broker: string | undefined;
  /** Whether both listen (false once either exits or is late). */
  listening: Promise<boolean>;
  /** The broker serves the restore's start only: after runc, it and its socket go. */
  stopBroker(): Promise<void>;
  /** Both go (a restore that failed or went eager). */
  stop(): Promise<void>;
  /**
   * The restore runs: its pages daemon must outlive the daemon. Until then
   * both die with it (through forkd-spawn), never left waiting for ever.
   */
  release(): void;
  /** The pages daemon, which ends once every page is in, cleanly; a failure leaves pages out (see LazyPagesWaits). */
  pages: { pid: Promise<number>; exited: Promise<HelperEnd> };
}

/** `criu lazy-pages` on `lazy.sock`, and the userfaultfd broker on `broker.sock` when given. */
export function startLazyDaemons(lazy: { sock: string; criu: string; imagesDir: string; workDir: string }, broker?: { sock: string; tool: string; hostId: number }): LazyDaemons {
  const pages = listeningDaemon(lazy.sock, lazy.criu, ['lazy-pages', '--images-dir', lazy.imagesDir, '--work-dir', lazy.workDir, '-o', 'lazy-pages.log']);
  const brokered = broker ? listeningDaemon(broker.sock, broker.tool, [broker.sock, String(broker.hostId)]) : undefined;
  const stopBroker = async () => {
    if (!brokered || !broker) return;
    await brokered.kill();
    await rm(broker.sock, { force: true });
  };
  return {
    broker: broker?.sock,
    listening: Promise.all([pages.listening, brokered?.listening ?? true]).then(([a, b]) => a && b),
    stopBroker,
    release: pages.release,
    pages: { pid: pages.pid, exited: pages.exited },
    async stop() {
      await pages.kill();
      await stopBroker();
    },
  };
}
