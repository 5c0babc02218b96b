import { chmod, mkdir, open, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { readMounts } from '../../shared/mountinfo.js';

export interface PoolOptions {
  /** Where the Btrfs filesystem is (or will be) mounted. */
  mountPoint: string;
  /** Loop image backing the pool; undefined when mountPoint is an existing Btrfs path. */
  image?: string | undefined;
  sizeBytes: number;
}

export async function isBtrfs(path: string): Promise<boolean> {
  const r = await exec('stat', ['-f', '-c', '%T', path], { allowFailure: true });
  return r.code === 0 && r.stdout.trim() === 'btrfs';
}

export async function isMountPoint(path: string): Promise<boolean> {
  const target = path.replace(/\/+$/, '');
  return (await readMounts()).some((m) => m.mountPoint === target);
}

/** The per-mount options (nodev, noatime, …) of the topmost mount at `path`, if one is there. */
async function mountOptions(path: string): Promise<string[] | undefined> {
  const target = path.replace(/\/+$/, '');
  return (await readMounts()).filter((m) => m.mountPoint === target).pop()?.options;
}

/**
 * Makes sure the storage pool is a mounted Btrfs filesystem: an existing Btrfs
 * path is used as is; otherwise a sparse loop image is created once and
 * mounted on every start.
 */
export async function ensurePool(opts: PoolOptions, log: (msg: string) => void = () => {}): Promise<void> {
  await mkdir(opts.mountPoint, { recursive: true, mode: 0o700 });
  if (!opts.image) {
    if (!(await isBtrfs(opts.mountPoint))) throw new ForkdError('FAILED_PRECONDITION', `${opts.mountPoint} is not on a Btrfs filesystem`);
    await closePool(opts.mountPoint);
    // Not forkd's mount to change: say so instead.
    const r = await exec('findmnt', ['-n', '-o', 'VFS-OPTIONS', '-T', opts.mountPoint], { allowFailure: true });
    if (r.code === 0 && !r.stdout.trim().split(',').includes('nodev')) log(`FORKD_POOL ${opts.mountPoint} is on a mount without nodev: device nodes sandboxes make there would open on the host (mount it with nodev)`);
    return;
  }
  if (await isMountPoint(opts.mountPoint)) {
    if (!(await isBtrfs(opts.mountPoint))) throw new ForkdError('FAILED_PRECONDITION', `${opts.mountPoint} is mounted but not Btrfs`);
    // Mounted by an older forkd (before nodev): the remount keeps its other options; running sandboxes keep their own binds.
    if (!(await mountOptions(opts.mountPoint))?.includes('nodev')) await exec('mount', ['-o', 'remount,nodev', opts.mountPoint]);
    await closePool(opts.mountPoint);
    return;
  }
  const exists = await stat(opts.image).then(
    () => true,
    () => false,
  );
  if (!exists) {
    log(`creating ${Math.round(opts.sizeBytes / 2 ** 30)} GiB sparse pool image ${opts.image}`);
    await mkdir(dirname(opts.image), { recursive: true });
    const tmp = `${opts.image}.tmp`;
    const fh = await open(tmp, 'w', 0o600);
    await fh.truncate(opts.sizeBytes);
    await fh.close();
    await exec('mkfs.btrfs', ['-q', '-f', '-L', 'forkd', ...POOL_MKFS_OPTIONS, tmp]);
    // The rename makes a half-formatted image impossible after a crash.
    await exec('mv', [tmp, opts.image]);
  }
  await exec('mount', ['-o', POOL_MOUNT_OPTIONS, opts.image, opts.mountPoint]);
  await closePool(opts.mountPoint);
}

/**
 * The pool holds every tenant's files and memory images: its root is
 * root-only, whatever mounted it or made it (an older forkd, FORKD_POOL's
 * owner), so no other host user reaches a sandbox's files, a setuid binary or
 * a device node planted in one. Only the root directory changes: what is
 * below keeps the modes sandboxes see.
 */
async function closePool(mountPoint: string): Promise<void> {
  await chmod(mountPoint, 0o700);
}

/**
 * 8 KiB tree nodes and one copy of the metadata, where mkfs would make
 * 16 KiB nodes, twice. Every root is a snapshot of one template, so every
 * tree block of the template is shared by every sandbox, and the first write
 * a sandbox makes under a shared node (its start makes a few: /dev, /sys,
 * the agent's directory) copies that node and adds a back reference, in the
 * extent tree, to each of its children (up to ~490 with 16 KiB nodes). Each
 * child's references grow by one per sandbox that did so, until they fill
 * an extent tree leaf of their own: from then on that one copy dirties a
 * leaf per child, all written (twice) at the next transaction commit, which
 * the next create's snapshot waits for. Measured on a copy of the base
 * template, one sandbox start's writes then the next snapshot: 16 KiB nodes,
 * two copies, 0.7 MB written and 11 ms at the 3rd sandbox, 18 MB and 57 ms
 * at the 500th, 26 MB and 77 ms from the 1,000th on; 8 KiB nodes, one copy,
 * 3 MB and ~20 ms from the 400th on. 4 KiB nodes write less still, but
 * cannot hold an extended attribute over ~3.9 KB (file metadata takes up
 * to 4 KB in one). One copy: the pool is a file on the host's own disk, where
 * a second copy sits beside the first. A pool made before keeps its layout
 * (mkfs alone sets it).
 */
export const POOL_MKFS_OPTIONS = ['--nodesize', '8192', '--metadata', 'single'];

/**
 * `nodev`: a device node made in a sandbox's files (mknod with CAP_MKNOD)
 * opens nowhere, on the host or inside (a sandbox's root is a bind of a path
 * here and inherits the flag); the devices a sandbox uses are on its /dev,
 * a tmpfs of its own. No `nosuid`: the same inheritance would break every
 * setuid binary inside (su, sudo, ping; host-privacy.int.test.ts shows it).
 * Other host users are kept from a planted setuid binary by the root-only
 * mount point instead (closePool).
 */
export const POOL_MOUNT_OPTIONS = 'loop,noatime,compress=zstd:1,nodev';

export async function unmountPool(opts: PoolOptions): Promise<void> {
  if (opts.image && (await isMountPoint(opts.mountPoint))) {
    await exec('umount', ['-l', opts.mountPoint], { allowFailure: true });
  }
}
