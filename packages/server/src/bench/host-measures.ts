import { readFile, statfs } from 'node:fs/promises';
import { exec } from '../shared/exec.js';

/** Bytes the pool's filesystem has allocated, after its pending writes are committed. */
export async function poolUsed(mount: string): Promise<number> {
  await exec('btrfs', ['filesystem', 'sync', mount]);
  const st = await statfs(mount);
  return (st.blocks - st.bfree) * st.bsize;
}

/** Host memory that is not page cache: what idle sandboxes really pin. */
export async function pinnedMemory(): Promise<number> {
  const info = await readFile('/proc/meminfo', 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? 0);
  return (kb('AnonPages') + kb('KernelStack') + kb('PageTables') + kb('SUnreclaim') + kb('Shmem')) * 1024;
}
