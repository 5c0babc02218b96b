import { readFile, statfs } from 'node:fs/promises';

/** What the host has free for new memory (MemAvailable), 0 when unknown: staging decisions err on the pool's side. */
export async function memAvailableBytes(): Promise<number> {
  const m = /MemAvailable:\s+(\d+) kB/.exec(await readFile('/proc/meminfo', 'utf8').catch(() => ''));
  return Number(m?.[1] ?? 0) * 1024;
}

/** Used and total bytes of the filesystem at `path` (the pool, for node stats). */
export async function poolUsage(path: string): Promise<{ usedBytes: number; sizeBytes: number }> {
  const fs = await statfs(path);
  return { usedBytes: (fs.blocks - fs.bfree) * fs.bsize, sizeBytes: fs.blocks * fs.bsize };
}
