import type { RootKind, SandboxRoot } from '../runtime/sandbox-root.js';
import type { FrozenCommit } from './frozen-commit.js';

/**
 * Copy-on-write volumes (modelled on containerd's Snapshotter). A key names a
 * volume, e.g. `templates/base` or `sandboxes/sbx-…`. Committed volumes are
 * read-only and may be the parent of any number of writable ones; removing a
 * volume never affects another (Btrfs shares extents, not ownership).
 */
export interface Storage {
  /** Host path of a volume (whether or not it exists). */
  path(key: string): string;
  /** A volume as the root of a sandbox, of the kind its runtime takes (Runtime.rootKind); throws for a kind this storage cannot give. */
  root(key: string, kind: RootKind): SandboxRoot;
  exists(key: string): Promise<boolean>;
  /** A new empty writable volume. */
  create(key: string): Promise<string>;
  /** A writable copy-on-write snapshot of `parent`. */
  prepare(key: string, parent: string): Promise<string>;
  /**
   * A read-only snapshot of `source` under `key`. With keepActive the source
   * stays usable (rolling snapshots); otherwise it is consumed.
   */
  commit(key: string, source: string, opts?: { keepActive?: boolean }): Promise<string>;
  /**
   * The same read-only snapshot as commit (keepActive), as a value a runtime
   * makes while the sandbox is frozen (see FrozenCommit), for runtimes that
   * cannot call back into this process then. Parent dirs are made now.
   */
  frozenCommit(key: string, source: string): Promise<FrozenCommit>;
  /**
   * A new read-only volume holding a copy of a host directory's tree
   * (owners, modes, times, hard links kept; extents shared where the
   * filesystem can): how a template's root comes into the pool.
   */
  importTree(key: string, sourceDir: string): Promise<void>;
  /**
   * Moves a host directory (memory images, on the pool's filesystem) into the
   * pool as the plain directory `key`, where nothing may be yet; its parent
   * directories are made.
   */
  adoptDir(key: string, sourceDir: string): Promise<void>;
  /** Removes a plain directory of the pool (see adoptDir) and everything in it; idempotent. */
  removeDir(key: string): Promise<void>;
  /**
   * Whether volume `key` is still what the read-only `snapshot` was
   * committed from, nothing committed to it since and no volume nested in
   * it, so a restore of that snapshot may keep it rather than copy the
   * snapshot (true only when that is known: false when it cannot tell).
   * Writes still in the page cache are not seen: the caller must know that
   * nothing wrote the volume since the commit.
   */
  unchangedSince(key: string, snapshot: string): Promise<boolean>;
  /** Atomically renames a volume (used to publish a finished template). */
  rename(from: string, to: string): Promise<void>;
  remove(key: string): Promise<void>;
  /** Keys of the volumes directly under a prefix, e.g. `sandboxes`. */
  list(prefix: string): Promise<string[]>;
  /** Bytes a volume holds, and of those the ones no other volume shares (what it wrote itself). */
  diskUsage(key: string): Promise<{ totalBytes: number; exclusiveBytes: number }>;
  /** Used and total bytes of the filesystem the pool is on (node stats). */
  usage(): Promise<{ usedBytes: number; sizeBytes: number }>;
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}(\/[A-Za-z0-9.][A-Za-z0-9._-]{0,127}){0,4}$/;

export function assertKey(key: string): void {
  if (!KEY.test(key) || key.split('/').some((p) => p === '..' || p === '.')) throw new Error(`invalid storage key: ${key}`);
}
