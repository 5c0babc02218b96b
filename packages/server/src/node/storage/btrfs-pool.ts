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

/** The per-mount options (nodev, noatime, …) of the topmost mount at `path`, if one is there. */
async function mountOptions(path: string): Promise<string[] | undefined> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const target = path.replace(/\/+$/, '');
  const line = info.split('\n').filter((l) => unescapeMount(l.split(' ')[4] ?? '') === target).pop();
  return line?.split(' ')[5]?.split(',');
}

export function unescapeMount(s: string): string {
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
