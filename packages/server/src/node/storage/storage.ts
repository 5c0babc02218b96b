/**
 * Copy-on-write volumes (modelled on containerd's Snapshotter). A key names a
 * volume, e.g. `templates/base` or `sandboxes/sbx-…`. Committed volumes are
 * read-only and may be the parent of any number of writable ones; removing a
 * volume never affects another (Btrfs shares extents, not ownership).
 */
export interface Storage {
  /** Host path of a volume (whether or not it exists). */
  path(key: string): string;
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
   * The argv of a command that makes the same read-only snapshot as commit
   * (keepActive), for callers that cannot call back into this process — the
   * post-dump hook CRIU runs while a sandbox is frozen. Parent dirs are made.
   */
  commitCommand(key: string, source: string): Promise<string[]>;
  /** Atomically renames a volume (used to publish a finished template). */
  rename(from: string, to: string): Promise<void>;
  remove(key: string): Promise<void>;
  /** Keys of the volumes directly under a prefix, e.g. `sandboxes`. */
  list(prefix: string): Promise<string[]>;
  /** Bytes a volume holds, and of those the ones no other volume shares (what it wrote itself). */
  diskUsage(key: string): Promise<{ totalBytes: number; exclusiveBytes: number }>;
}

const KEY = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}(\/[A-Za-z0-9.][A-Za-z0-9._-]{0,127}){0,4}$/;

export function assertKey(key: string): void {
  if (!KEY.test(key) || key.split('/').some((p) => p === '..' || p === '.')) throw new Error(`invalid storage key: ${key}`);
}
