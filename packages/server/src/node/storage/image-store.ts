import { constants } from 'node:fs';
import { copyFile, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../shared/config.js';
import { exec } from '../../shared/exec.js';

export const DEDUPE_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-dedupe');

const PAGE = 4096;
const CHUNK = 1024 * 1024;
/** Above this share of rewritten bytes the layout moved: copy, then let forkd-dedupe match pages. */
const PATCH_LIMIT = 0.25;

export interface StoreStats {
  files: number;
  bytesTotal: number;
  /** Bytes written to the pool; the rest is shared with the previous snapshot. */
  bytesWritten: number;
}

/**
 * Moves CRIU images from a staging directory into the pool so that their
 * pages share storage with the previous snapshot's images. This kernel has no
 * soft-dirty tracking, so CRIU cannot dump incrementally; instead:
 * - fast path: a pages image starts as a reflink of the previous image of the
 *   same name and only the pages that differ are rewritten (an idle process
 *   keeps its layout, so this writes almost nothing);
 * - when the layout moved (many pages differ at their offsets), the image is
 *   copied and `forkd-dedupe` (packages/host-tools) shares the pages that
 *   moved too (Btrfs FIDEDUPERANGE: the kernel verifies the bytes).
 * Deleting either snapshot later never affects the other: extents are
 * reference-counted.
 */
export async function storeImages(staging: string, dest: string, previous: string | undefined, tool = DEDUPE_TOOL): Promise<StoreStats> {
  await mkdir(dest, { recursive: true });
  const stats: StoreStats = { files: 0, bytesTotal: 0, bytesWritten: 0 };
  let needDedupe = false;
  for (const name of await readdir(staging)) {
    const src = join(staging, name);
    const dst = join(dest, name);
    const size = (await stat(src)).size;
    stats.files++;
    stats.bytesTotal += size;
    const prev = previous && name.startsWith('pages-') ? join(previous, name) : undefined;
    if (prev && (await reflink(prev, dst))) {
      const written = await patch(src, dst, size);
      if (written <= size * PATCH_LIMIT) {
        stats.bytesWritten += written;
        continue;
      }
      needDedupe = true;
    }
    await copyFile(src, dst);
    if (prev) {
      // Dedupe only shares ranges that are on disk: delayed allocation would leave nothing to share yet.
      const fh = await open(dst, 'r');
      await fh.datasync().finally(() => fh.close());
      needDedupe = true;
    }
    stats.bytesWritten += size;
  }
  await rm(staging, { recursive: true, force: true });
  if (needDedupe && previous) {
    const r = await exec(tool, [previous, dest]);
    const line = r.stdout.trim().split('\n').pop();
    const shared = line ? Number((JSON.parse(line) as { bytesShared?: number }).bytesShared ?? 0) : 0;
    stats.bytesWritten = Math.max(0, stats.bytesWritten - shared);
  }
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

/**
 * Makes `dst` (a reflinked copy of an older image) equal to `src`, writing
 * only the runs of pages that differ; returns the bytes written. Stops early
 * (returning more than the limit) once the layout has clearly moved.
 */
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
      let runStart = -1;
      for (let p = 0; p <= na; p += PAGE) {
        const end = Math.min(p + PAGE, na);
        const differs = p < na && (end > nb || a.compare(b, p, end, p, end) !== 0);
        if (differs && runStart < 0) runStart = p;
        if (!differs && runStart >= 0) {
          await d.write(a, runStart, p - runStart, off + runStart);
          written += p - runStart;
          runStart = -1;
        }
      }
      if (written > size * PATCH_LIMIT) return written;
    }
    await d.truncate(size);
  } finally {
    await s.close();
    await d.close();
  }
  return written;
}
