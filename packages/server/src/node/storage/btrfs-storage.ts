import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { REPO_ROOT } from '../../shared/config.js';
import { exec } from '../../shared/exec.js';
import type { RootKind, SandboxRoot } from '../runtime/sandbox-root.js';
import { adoptDirAt, copyTreeInto, directoryRoot, pathExists, removeDirAt } from './directory-ops.js';
import type { FrozenCommit } from './frozen-commit.js';
import { poolUsage } from './host-space.js';
import { rootDiskUsage } from './rootfs-ops.js';
import { assertKey, type Storage } from './storage.js';

/**
 * forkd-subvol (host-tools): deletes the subvolumes nested in a volume by id,
 * deepest first; makes snapshots (btrfs-progs' ioctl from a static binary:
 * ~3 ms less per snapshot here, inside a freeze too); tells a volume left
 * unchanged since a snapshot of it.
 */
export const SUBVOL_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-subvol');

/** Storage on a Btrfs filesystem: every volume is a subvolume. */
export class BtrfsStorage implements Storage {
  readonly #root: string;

  readonly #onRemove: (() => void) | undefined;

  /** `onRemove`: told after each volume removed (simple quotas sweep the lineage groups left empty, see LineageSweeper). */
  constructor(root: string, opts: { onRemove?: () => void } = {}) {
    this.#root = root;
    this.#onRemove = opts.onRemove;
  }

  path(key: string): string {
    assertKey(key);
    return join(this.#root, key);
  }

  /** A subvolume is a host directory: the container runtime's kind of root. */
  root(key: string, kind: RootKind): SandboxRoot {
    return directoryRoot(this.path(key), kind);
  }

  async exists(key: string): Promise<boolean> {
    return pathExists(this.path(key));
  }

  async create(key: string): Promise<string> {
    const p = this.path(key);
    await mkdir(dirname(p), { recursive: true });
    await exec('btrfs', ['subvolume', 'create', p]);
    return p;
  }

  async prepare(key: string, parent: string): Promise<string> {
    const src = this.path(parent);
    const p = this.path(key);
    if (!(await this.exists(parent))) throw new ForkdError('NOT_FOUND', `volume ${parent} does not exist`);
    await mkdir(dirname(p), { recursive: true });
    await exec(SUBVOL_TOOL, ['snapshot', src, p]);
    return p;
  }

  async commit(key: string, source: string, opts: { keepActive?: boolean } = {}): Promise<string> {
    const src = this.path(source);
    const p = this.path(key);
    await mkdir(dirname(p), { recursive: true });
    await exec(SUBVOL_TOOL, ['snapshot', '-r', src, p]);
    if (!opts.keepActive) await this.remove(source);
    return p;
  }

  /** Btrfs's own record (forkd-subvol unchanged): the snapshot's parent is the volume, whose tree was last written in the snapshot's transaction. */
  async unchangedSince(key: string, snapshot: string): Promise<boolean> {
    const r = await exec(SUBVOL_TOOL, ['unchanged', this.path(snapshot), this.path(key)], { allowFailure: true });
    return r.code === 0;
  }

  async frozenCommit(key: string, source: string): Promise<FrozenCommit> {
    const p = this.path(key);
    await mkdir(dirname(p), { recursive: true });
    return { kind: 'host-command', argv: [SUBVOL_TOOL, 'snapshot', '-r', this.path(source), p] };
  }

  /** A subvolume filled by a copy, then made read-only in place (a property, no second snapshot). */
  async importTree(key: string, sourceDir: string): Promise<void> {
    const p = await this.create(key);
    await copyTreeInto(sourceDir, p);
    await exec('btrfs', ['property', 'set', '-ts', p, 'ro', 'true']);
  }

  adoptDir(key: string, sourceDir: string): Promise<void> {
    return adoptDirAt(this.path(key), sourceDir);
  }

  removeDir(key: string): Promise<void> {
    return removeDirAt(this.path(key));
  }

  usage(): Promise<{ usedBytes: number; sizeBytes: number }> {
    return poolUsage(this.#root);
  }

  async rename(from: string, to: string): Promise<void> {
    const dst = this.path(to);
    await mkdir(dirname(dst), { recursive: true });
    await rename(this.path(from), dst);
  }

  /**
   * Always succeeds on a volume that exists. A sandbox root may hold
   * subvolumes of its own (made before seccomp refused BTRFS_IOC_SUBVOL_CREATE),
   * which Btrfs will not delete it over (ENOTEMPTY): those go first, by id,
   * never by a path inside the root (see forkd-subvol).
   */
  async remove(key: string): Promise<void> {
    const p = this.path(key);
    if (!(await this.exists(key))) return;
    let r = await deleteSubvolume(p);
    if (r.code !== 0 && /Directory not empty/i.test(r.stderr)) {
      await exec(SUBVOL_TOOL, ['delete-nested', this.#root, p]);
      r = await deleteSubvolume(p);
    }
    if (r.code !== 0) {
      // Not a subvolume (e.g. a half-made import that failed before `create`): a plain directory.
      if (/Not a Btrfs subvolume|not a subvolume/i.test(r.stderr)) await rm(p, { recursive: true, force: true });
      else throw new ForkdError('INTERNAL', `btrfs subvolume delete failed: ${r.stderr.trim()}`, { cmd: `btrfs subvolume delete ${p}`, exitCode: r.code, stderrTail: r.stderr.slice(-4000) });
    }
    this.#onRemove?.();
  }

  /**
   * Walked by forkd-rootfs-ops, not `btrfs filesystem du`: a volume is a
   * sandbox's root, and that tool re-opens every entry by a path string
   * after a stat that follows links, so a running sandbox could send it
   * into host directories (see rootfs-ops.ts).
   */
  async diskUsage(key: string): Promise<{ totalBytes: number; exclusiveBytes: number }> {
    return rootDiskUsage(this.path(key));
  }

  async list(prefix: string): Promise<string[]> {
    assertKey(prefix);
    const names = await readdir(join(this.#root, prefix)).catch(() => [] as string[]);
    return names.sort().map((n) => `${prefix}/${n}`);
  }
}

function deleteSubvolume(path: string): Promise<{ code: number; stderr: string }> {
  return exec('btrfs', ['subvolume', 'delete', path], { allowFailure: true });
}
