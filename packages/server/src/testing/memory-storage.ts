import { chmod, lstat, mkdir, mkdtemp, readdir, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../shared/exec.js';
import type { RootKind, SandboxRoot } from '../node/runtime/sandbox-root.js';
import { adoptDirAt, copyTreeInto, directoryRoot, pathExists, removeDirAt } from '../node/storage/directory-ops.js';
import type { FrozenCommit } from '../node/storage/frozen-commit.js';
import { poolUsage } from '../node/storage/host-space.js';
import { assertKey, type Storage } from '../node/storage/storage.js';

/** What a volume's files were when it was copied, by relative path: a file still so is shared with where it came from. */
type Baseline = Map<string, string>;

interface VolumeState {
  /** Where it was last seen (the manager renames directories holding volumes itself: updated when seen again). */
  path: string;
  baseline: Baseline;
  /**
   * Committed (read-only). As root, the immutable attribute seals it and
   * modes are untouched (empty map); otherwise its entries lost their write
   * bits, and this holds the modes they had, which copies get back.
   */
  sealed?: Map<string, number>;
}

const asRoot = process.geteuid?.() === 0;

/**
 * Storage without Btrfs or root, for unit tests of the manager: every volume
 * is a directory under a temporary root, so `path()` is a real directory the
 * manager's file operations work in. prepare and commit copy (`cp -a`,
 * sharing extents where the filesystem can); read-only commits and shared
 * extents are emulated well enough to pass storage-conformance.ts. No
 * frozenCommit: tests that snapshot a running sandbox need BtrfsStorage.
 *
 * Volumes are tracked by their top directory's inode, not their key, so a
 * directory renamed around them (a snapshot's `.tmp-` dir) keeps them known.
 * Its walks use Node's fs on the volume's paths, which forkd itself never
 * does in a sandbox's root (rootfs-ops.ts): here no sandbox runs to race it.
 */
export class MemoryStorage implements Storage {
  /** The directory every volume is under. */
  readonly dir: string;
  readonly #volumes = new Map<string, VolumeState>();

  /** A new storage on an empty directory under `parent`; `close` removes it all. */
  static async open(parent = tmpdir()): Promise<MemoryStorage> {
    return new MemoryStorage(await mkdtemp(join(parent, 'forkd-memory-storage-')));
  }

  constructor(root: string) {
    this.dir = root;
  }

  path(key: string): string {
    assertKey(key);
    return join(this.dir, key);
  }

  root(key: string, kind: RootKind): SandboxRoot {
    return directoryRoot(this.path(key), kind);
  }

  async exists(key: string): Promise<boolean> {
    return pathExists(this.path(key));
  }

  async create(key: string): Promise<string> {
    const p = this.path(key);
    await mkdir(dirname(p), { recursive: true });
    await mkdir(p);
    // The mode of a new subvolume's root, whatever the umask.
    await chmod(p, 0o755);
    await this.#track(p, {});
    return p;
  }

  async prepare(key: string, parent: string): Promise<string> {
    const src = this.path(parent);
    const p = this.path(key);
    if (!(await this.exists(parent))) throw new ForkdError('NOT_FOUND', `volume ${parent} does not exist`);
    await mkdir(dirname(p), { recursive: true });
    await copyTree(src, p);
    const from = await this.#state(src);
    if (from?.sealed?.size) await restoreModes(p, from.sealed);
    await this.#track(p, {});
    await this.#shared(src);
    return p;
  }

  async commit(key: string, source: string, opts: { keepActive?: boolean } = {}): Promise<string> {
    const src = this.path(source);
    const p = this.path(key);
    await mkdir(dirname(p), { recursive: true });
    await copyTree(src, p);
    const from = await this.#state(src);
    // A copy of a committed volume lost its write bits already: it keeps the modes recorded then.
    await this.#track(p, { sealed: from?.sealed?.size ? new Map(from.sealed) : await seal(p) });
    if (!opts.keepActive) await this.remove(source);
    else await this.#shared(src);
    return p;
  }

  /** A copied directory keeps no record of changes: it never knows (every restore copies). */
  async unchangedSince(key: string, snapshot: string): Promise<boolean> {
    assertKey(key);
    assertKey(snapshot);
    return false;
  }

  async frozenCommit(key: string, source: string): Promise<FrozenCommit> {
    throw new ForkdError('NOT_IMPLEMENTED', `MemoryStorage has no command form of commit (${source} -> ${key}): snapshot tests need BtrfsStorage`);
  }

  async importTree(key: string, sourceDir: string): Promise<void> {
    const p = await this.create(key);
    await copyTreeInto(sourceDir, p);
    await this.#track(p, { sealed: await seal(p) });
  }

  adoptDir(key: string, sourceDir: string): Promise<void> {
    return adoptDirAt(this.path(key), sourceDir);
  }

  removeDir(key: string): Promise<void> {
    return removeDirAt(this.path(key));
  }

  usage(): Promise<{ usedBytes: number; sizeBytes: number }> {
    return poolUsage(this.dir);
  }

  async rename(from: string, to: string): Promise<void> {
    const src = this.path(from);
    const dst = this.path(to);
    await mkdir(dirname(dst), { recursive: true });
    const state = await this.#state(src);
    // As on Btrfs, where a read-only subvolume's `..` cannot be rewritten.
    if (state?.sealed && dirname(src) !== dirname(dst)) throw Object.assign(new Error(`EROFS: read-only file system, rename '${src}' -> '${dst}'`), { code: 'EROFS' });
    // As root the immutable attribute forbids even a rename in place: lifted for that moment.
    const lift = !!state?.sealed && asRoot;
    if (lift) await exec('chattr', ['-f', '-i', src]);
    try {
      await rename(src, dst);
    } finally {
      if (lift) await exec('chattr', ['-f', '+i', (await exists(dst)) ? dst : src]);
    }
    for (const s of this.#volumes.values()) if (s.path === src || s.path.startsWith(`${src}/`)) s.path = dst + s.path.slice(src.length);
  }

  async remove(key: string): Promise<void> {
    const p = this.path(key);
    if (!(await this.exists(key))) return;
    const inside = [...this.#volumes].filter(([, s]) => s.path === p || s.path.startsWith(`${p}/`));
    if ((await this.#state(p))?.sealed || inside.some(([, s]) => s.sealed)) await unsealAll(p);
    // A sealed volume below that was moved here behind this storage's back: found by failing.
    await rm(p, { recursive: true, force: true }).catch(async () => {
      await unsealAll(p);
      await rm(p, { recursive: true, force: true });
    });
    for (const [id] of inside) this.#volumes.delete(id);
  }

  async list(prefix: string): Promise<string[]> {
    assertKey(prefix);
    const names = await readdir(join(this.dir, prefix)).catch(() => [] as string[]);
    return names.sort().map((n) => `${prefix}/${n}`);
  }

  /** Bytes of its regular files; exclusive: those written since it was copied (a copy shares what it copied). */
  async diskUsage(key: string): Promise<{ totalBytes: number; exclusiveBytes: number }> {
    const p = this.path(key);
    const baseline = (await this.#state(p))?.baseline ?? new Map<string, string>();
    let totalBytes = 0;
    let exclusiveBytes = 0;
    const seen = new Set<bigint>();
    await walk(p, async (rel, st) => {
      if (!st.isFile() || (st.nlink > 1n && seen.has(st.ino))) return;
      seen.add(st.ino);
      totalBytes += Number(st.size);
      if (baseline.get(rel) !== fingerprint(st)) exclusiveBytes += Number(st.size);
    });
    return { totalBytes, exclusiveBytes };
  }

  /** Removes every volume and the root (a failed test may leave sealed ones). */
  async close(): Promise<void> {
    await unsealAll(this.dir);
    await rm(this.dir, { recursive: true, force: true });
    this.#volumes.clear();
  }

  async #state(p: string): Promise<VolumeState | undefined> {
    const st = await lstatBig(p).catch(() => undefined);
    const s = st && this.#volumes.get(identity(st));
    if (s) s.path = p;
    return s;
  }

  async #track(p: string, opts: { sealed?: Map<string, number> | undefined }): Promise<void> {
    this.#volumes.set(identity(await lstatBig(p)), { path: p, baseline: await baselineOf(p), ...(opts.sealed ? { sealed: opts.sealed } : {}) });
  }

  /** After a snapshot of it, a writable volume shares everything it has. */
  async #shared(p: string): Promise<void> {
    const s = await this.#state(p);
    if (s && !s.sealed) s.baseline = await baselineOf(p);
  }
}

async function exists(p: string): Promise<boolean> {
  return lstat(p).then(
    () => true,
    () => false,
  );
}

async function copyTree(src: string, dst: string): Promise<void> {
  await exec('cp', ['-a', '--reflink=auto', '--no-target-directory', src, dst]);
}

type BigStats = Awaited<ReturnType<typeof lstatBig>>;
const lstatBig = (p: string) => lstat(p, { bigint: true });

/** Every entry under root (root itself as ''), parents before children, without following symlinks. */
async function walk(root: string, fn: (rel: string, st: BigStats) => Promise<void>): Promise<void> {
  const visit = async (rel: string): Promise<void> => {
    const st = await lstatBig(rel ? join(root, rel) : root);
    await fn(rel, st);
    if (!st.isDirectory()) return;
    for (const name of (await readdir(rel ? join(root, rel) : root)).sort()) await visit(rel ? `${rel}/${name}` : name);
  };
  await visit('');
}

/** A directory for as long as it exists: its birth time tells a reused inode number apart. */
function identity(st: BigStats): string {
  return `${st.dev}:${st.ino}:${st.birthtimeNs}`;
}

function fingerprint(st: BigStats): string {
  return `${st.ino}:${st.size}:${st.mtimeNs}`;
}

async function baselineOf(root: string): Promise<Baseline> {
  const b: Baseline = new Map();
  await walk(root, async (rel, st) => {
    if (st.isFile()) b.set(rel, fingerprint(st));
  });
  return b;
}

/**
 * Makes a tree read-only: as root with the immutable attribute (root ignores
 * modes), otherwise by taking away write bits. Returns the modes to give
 * copies back (none as root: modes were not touched).
 */
async function seal(root: string): Promise<Map<string, number>> {
  const modes = new Map<string, number>();
  if (asRoot) {
    // Device nodes and FIFOs take no attributes (chattr says so and goes on); the suite checks the rest is sealed.
    await exec('chattr', ['-R', '-f', '+i', root], { allowFailure: true });
    return modes;
  }
  await walk(root, async (rel, st) => {
    if (st.isSymbolicLink()) return;
    const mode = Number(st.mode & 0o7777n);
    modes.set(rel, mode);
    await chmod(rel ? join(root, rel) : root, mode & ~0o222);
  });
  return modes;
}

async function restoreModes(root: string, modes: Map<string, number>): Promise<void> {
  for (const [rel, mode] of modes) await chmod(rel ? join(root, rel) : root, mode).catch(() => {});
}

/** Everything under p deletable again (symlinks are not followed by either tool). */
async function unsealAll(p: string): Promise<void> {
  if (asRoot) await exec('chattr', ['-R', '-f', '-i', p], { allowFailure: true });
  else await exec('chmod', ['-R', 'u+w', p], { allowFailure: true });
}
