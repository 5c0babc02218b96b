import type { Stats } from 'node:fs';
import { chmod, lstat, mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ForkdError } from '@forkd/protocol';

/**
 * The CRIU staging directory (FORKD_STAGING_DIR, /dev/shm/forkd) holds every
 * dumping sandbox's memory and the hook file forkd's CRIU action script acts
 * on. It sits in a directory every user can write to, so another user could
 * create it first, or put a symlink there, and then read the images or
 * choose what the action script writes where. It is therefore made by forkd
 * exclusively (mkdir, never over something that exists) and checked with
 * lstat (a real directory, owned by root, nobody else's bits) at start and
 * before every dump into it.
 */
export async function openStagingDir(path: string, log: (msg: string) => void = () => {}): Promise<void> {
  await checkParent(path);
  let st = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!st) {
    // Not recursive: the parent must already be there, and an EEXIST here (a race with another user) is refused below.
    await mkdir(path, { mode: 0o700 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    st = await lstat(path);
  }
  refuseUnsafe(path, st, true);
  if ((st.mode & 0o077) !== 0) {
    // Root's own directory, readable by others (an older forkd made it 0755): nobody else could write into it.
    log(`making the CRIU staging directory ${path} root-only (it was ${octal(st.mode)})`);
    await chmod(path, 0o700);
    refuseUnsafe(path, await lstat(path), false);
  }
}

/** Before every use: the staging directory is still root's own, private directory. */
export async function checkStagingDir(path: string): Promise<void> {
  const st = await lstat(path).catch((err: NodeJS.ErrnoException) => {
    throw new ForkdError('FAILED_PRECONDITION', `the CRIU staging directory ${path} is gone (${err.code ?? err.message}); restart forkd to make it again`, { path });
  });
  refuseUnsafe(path, st, false);
}

/**
 * A staging dir whose parent someone else can write to (without the sticky
 * bit, like /dev/shm's) could be renamed away and replaced under forkd.
 */
async function checkParent(path: string): Promise<void> {
  const parent = dirname(path);
  const st = await lstat(parent).catch(() => undefined);
  if (!st) throw new ForkdError('FAILED_PRECONDITION', `the parent of the CRIU staging directory ${path} does not exist: set FORKD_STAGING_DIR to a path in a tmpfs such as /dev/shm`, { path });
  const unsafe = !st.isDirectory() || st.uid !== 0 || ((st.mode & 0o022) !== 0 && (st.mode & 0o1000) === 0);
  if (unsafe) {
    throw new ForkdError('FAILED_PRECONDITION', `the CRIU staging directory ${path} is in ${parent} (owner uid ${st.uid}, mode ${octal(st.mode)}), which another user could rearrange: set FORKD_STAGING_DIR to a path under a root-owned directory (or a sticky one such as /dev/shm)`, { path });
  }
}

function refuseUnsafe(path: string, st: Stats, atStart: boolean): void {
  const fix = `check what it is, remove it (rm -rf ${path}) and start forkd again, or set FORKD_STAGING_DIR to another path`;
  let why: string | undefined;
  if (st.isSymbolicLink()) why = 'is a symbolic link';
  else if (!st.isDirectory()) why = 'is not a directory';
  else if (st.uid !== 0) why = `is owned by uid ${st.uid}, not root`;
  else if ((st.mode & 0o022) !== 0) why = `is writable by other users (mode ${octal(st.mode)})`;
  else if (!atStart && (st.mode & 0o077) !== 0) why = `is open to other users (mode ${octal(st.mode)})`;
  if (why) throw new ForkdError('FAILED_PRECONDITION', `the CRIU staging directory ${path} ${why}: another user may read sandboxes' memory or steer forkd's CRIU action script through it; ${fix}`, { path });
}

function octal(mode: number): string {
  return `0${(mode & 0o7777).toString(8)}`;
}
