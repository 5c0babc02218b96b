import { constants } from 'node:fs';
import { copyFile, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';

const PAGE = 4096;
const CHUNK = 1024 * 1024;

export interface StoreStats {
  files: number;
  /** Bytes actually written to the pool (the rest is shared with the previous snapshot). */
  bytesWritten: number;
  bytesTotal: number;
}

/**
 * Moves CRIU images from a staging directory into the pool so that
 * consecutive snapshots share unchanged memory: each pages image starts as a
 * reflink of the previous snapshot's image of the same name (sharing every
 * extent) and only the pages that differ are rewritten. This kernel has no
 * soft-dirty tracking, so CRIU's own incremental dumps are not available;
 * comparing against the previous image finds the unchanged pages instead.
 * Deleting either snapshot later never affects the other (extents are
 * reference-counted by Btrfs).
 */
export async function storeImages(staging: string, dest: string, previous: string | undefined): Promise<StoreStats> {
  await mkdir(dest, { recursive: true });
  const stats: StoreStats = { files: 0, bytesWritten: 0, bytesTotal: 0 };
  for (const name of await readdir(staging)) {
    const src = join(staging, name);
    const dst = join(dest, name);
    const size = (await stat(src)).size;
    stats.files++;
    stats.bytesTotal += size;
    const prev = previous && name.startsWith('pages-') ? join(previous, name) : undefined;
    if (prev && (await reflink(prev, dst))) {
      stats.bytesWritten += await patch(src, dst, size);
    } else {
      await copyFile(src, dst);
      stats.bytesWritten += size;
    }
  }
  await rm(staging, { recursive: true, force: true });
  return stats;
}

async function reflink(from: string, to: string): Promise<boolean> {
  try {
    await copyFile(from, to, constants.COPYFILE_FICLONE_FORCE);
    return true;
  } catch {
    return false;
  }
}

/** Rewrites in `dst` (a reflinked copy of an older image) the pages where `src` differs; returns bytes written. */
async function patch(src: string, dst: string, size: number): Promise<number> {
  const s = await open(src, 'r');
  const d = await open(dst, 'r+');
  let written = 0;
  try {
    const a = Buffer.allocUnsafe(CHUNK);
    const b = Buffer.allocUnsafe(CHUNK);
    for (let off = 0; off < size; off += CHUNK) {
      const want = Math.min(CHUNK, size - off);
      const { bytesRead: na } = await s.read(a, 0, want, off);
      const { bytesRead: nb } = await d.read(b, 0, want, off);
      // Runs of differing pages are written in one call.
      let runStart = -1;
      for (let p = 0; p <= na; p += PAGE) {
        const end = Math.min(p + PAGE, na);
        const differs = p < na && (p >= nb || a.compare(b, p, Math.min(end, nb), p, end) !== 0 || end > nb);
        if (differs && runStart < 0) runStart = p;
        if (!differs && runStart >= 0) {
          await d.write(a, runStart, p - runStart, off + runStart);
          written += p - runStart;
          runStart = -1;
        }
      }
    }
    await d.truncate(size);
  } finally {
    await s.close();
    await d.close();
  }
  return written;
}
