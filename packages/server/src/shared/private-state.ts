import { chmod, lstat, mkdir, open, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * forkd's state holds every tenant's files, memory images, proxy tokens and
 * keys: nothing it makes may be readable by another host user. The umask is
 * process-wide and inherited by every child (runc, CRIU, btrfs, cp, the host
 * tools), so one call covers what they create too; explicit modes where forkd
 * creates files keep that true for code run without it (a library caller).
 */
export const PRIVATE_UMASK = 0o077;

/** Sets the daemon's umask (idempotent). Tools that build files for sandboxes ask for 022 themselves (exec's `umask`). */
export function usePrivateUmask(): void {
  process.umask(PRIVATE_UMASK);
}

/**
 * A directory only root can enter: created 0700, and an existing one (an
 * older forkd left 0755) tightened. A gate: what is under it keeps its modes
 * (the pool's sandbox roots, the template cache must not change).
 */
export async function privateDir(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o700 });
  await chmod(path, 0o700);
}

/** Creates an empty file 0600 unless it exists (then it is tightened): e.g. a database before SQLite opens it. */
export async function privateFile(path: string): Promise<void> {
  const fh = await open(path, 'a', 0o600);
  try {
    const st = await fh.stat();
    if ((st.mode & 0o077) !== 0) await fh.chmod(st.mode & 0o700);
  } finally {
    await fh.close();
  }
}

/**
 * Takes group and other bits off a file or a whole tree (owner bits kept, so
 * executables stay executable). Symlinks are not followed; `stopAt` names
 * directories whose contents are left alone (mount points of other data).
 */
export async function tightenTree(path: string, stopAt: ReadonlySet<string> = new Set()): Promise<void> {
  const st = await lstat(path).catch(() => undefined);
  if (!st || st.isSymbolicLink()) return;
  if ((st.mode & 0o077) !== 0 && (st.isFile() || st.isDirectory())) await chmod(path, st.mode & 0o700);
  if (!st.isDirectory() || stopAt.has(path)) return;
  for (const name of await readdir(path).catch(() => [] as string[])) await tightenTree(join(path, name), stopAt);
}

/**
 * A directory others may pass through but not list (0711): the run dir, where
 * the runtime mounts sandbox roots (`roots/<key>`) that runc's init, running
 * as the sandbox's unprivileged host uid, must reach. Every entry in it is
 * gated on its own (0700, or a sandbox root's directory open to that
 * sandbox's ids only).
 */
export async function passThroughDir(path: string): Promise<void> {
  await mkdir(path, { recursive: true, mode: 0o711 });
  await chmod(path, 0o711);
}

export interface PrivateStateLayout {
  stateDir: string;
  runDir: string;
  cacheDir: string;
  /** The pool's mount point when it is inside the state dir: never walked (sandboxes' own files). */
  poolMountPoint: string;
}

/** In the run dir: the runtime's per-sandbox mount gates (RuncRuntime's mountRoot), which the runtime keeps itself. */
const RUN_DIR_OWN_GATES = new Set(['roots']);

/**
 * Start-up fix-up for installs made by an older forkd (0755 directories, 0644
 * databases and pool image): the state dir and everything forkd keeps
 * directly in it (databases with their -wal/-shm, admin key, pool image,
 * bundles with runc's and CRIU's logs) become owner-only. The pool and the
 * cache are gated, not walked: the cache holds template root filesystems
 * whose modes sandboxes see, the pool the sandboxes' own files. The run dir's
 * directories (runc's state, network namespaces) are gated one by one; its
 * files are namespace mounts and never walked.
 */
export async function tightenPrivateState(l: PrivateStateLayout): Promise<void> {
  await privateDir(l.stateDir);
  // The cache may live outside the state dir (FORKD_CACHE_DIR): its own gate.
  await privateDir(l.cacheDir);
  const gates = new Set([l.poolMountPoint, l.cacheDir, l.runDir]);
  for (const name of await readdir(l.stateDir)) {
    const p = join(l.stateDir, name);
    if (gates.has(p)) continue;
    await tightenTree(p);
  }
  await passThroughDir(l.runDir);
  for (const e of await readdir(l.runDir, { withFileTypes: true })) {
    if (e.isDirectory() && !RUN_DIR_OWN_GATES.has(e.name)) await privateDir(join(l.runDir, e.name));
  }
}
