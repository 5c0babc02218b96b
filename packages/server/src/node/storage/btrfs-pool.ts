import { chmod, mkdir, open, readFile, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';

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
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const target = path.replace(/\/+$/, '');
  return info.split('\n').some((line) => unescapeMount(line.split(' ')[4] ?? '') === target);
}

function unescapeMount(s: string): string {
  return s.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
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
    return;
  }
  if (await isMountPoint(opts.mountPoint)) {
    if (!(await isBtrfs(opts.mountPoint))) throw new ForkdError('FAILED_PRECONDITION', `${opts.mountPoint} is mounted but not Btrfs`);
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
    await exec('mkfs.btrfs', ['-q', '-f', '-L', 'forkd', tmp]);
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
 * No `nosuid`: a sandbox's root is a bind mount of a path in this mount, and
 * a bind inherits the mount's flags (locked inside a user namespace), so
 * nosuid would break every setuid binary inside (su, sudo, ping). No `nodev`
 * either while a sandbox's /dev is a directory of its root here: its
 * /dev/null would stop opening. Another host user is kept away by the root-only
 * mount point instead (closePool), not by these flags.
 */
export const POOL_MOUNT_OPTIONS = 'loop,noatime,compress=zstd:1';

export async function unmountPool(opts: PoolOptions): Promise<void> {
  if (opts.image && (await isMountPoint(opts.mountPoint))) {
    await exec('umount', ['-l', opts.mountPoint], { allowFailure: true });
  }
}
