import { lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { exec } from '../../shared/exec.js';

/**
 * Removes a directory `btrfs receive` wrote into, whatever a failed or
 * hostile stream left there: its volumes (a half-received one included;
 * named by the stream, so never trusted as a storage key) by path, then
 * the directory. Idempotent.
 */
export async function removeReceived(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const p = join(dir, name);
    const st = await lstat(p).catch(() => undefined);
    // A subvolume's root is inode 256; a plain directory or file is left to rm.
    if (st?.isDirectory() && st.ino === 256) await exec('btrfs', ['subvolume', 'delete', p], { allowFailure: true });
  }
  await rm(dir, { recursive: true, force: true });
}
