import { constants } from 'node:fs';
import { copyFile, link, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { REPO_ROOT } from '../../shared/config.js';
import { exec } from '../../shared/exec.js';

export const DEDUPE_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-dedupe');
export const PATCH_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-patch');

/** Above this share of rewritten bytes the layout moved: copy, then let forkd-dedupe match pages. */
const PATCH_LIMIT = 0.25;

export interface StoreStats {
  files: number;
  bytesTotal: number;
  /** Bytes written to the pool; the rest is shared with the previous snapshot. */
  bytesWritten: number;
}

export interface ImageTools {
  dedupe: string;
  patch: string;
}

/**
 * Moves checkpoint images (CRIU's) from a staging directory into the pool so that their
 * pages share storage with the previous snapshot's images. This kernel has no
 * soft-dirty tracking, so CRIU cannot dump incrementally; instead:
 * - fast path: a pages image starts as a reflink of the previous image of the
 *   same name and `forkd-patch` (packages/host-tools) rewrites only the pages
 *   that differ (an idle process keeps its layout, so this writes almost
 *   nothing; one process for every image, comparing page sums kept beside
 *   the previous image, or its bytes where it has none);
 * - when the layout moved (many pages differ at their offsets), the image is
 *   copied and `forkd-dedupe` shares the pages that moved too (Btrfs
 *   FIDEDUPERANGE: the kernel verifies the bytes).
 * Deleting either snapshot later never affects the other: extents are
 * reference-counted. The staging directory is left to the caller, which
 * knows when the stored copy is committed.
 */
export async function storeImages(staging: string, dest: string, previous: string | undefined, isPages: (name: string) => boolean, tools: Partial<ImageTools> = {}): Promise<StoreStats> {
  const tool = { dedupe: DEDUPE_TOOL, patch: PATCH_TOOL, ...tools };
  await mkdir(dest, { recursive: true });
  const stats: StoreStats = { files: 0, bytesTotal: 0, bytesWritten: 0 };
  const copies: string[] = [];
  const reflinked: string[] = [];
  for (const name of await readdir(staging)) {
    const size = (await stat(join(staging, name))).size;
    stats.files++;
    stats.bytesTotal += size;
    const prev = previous && isPages(name) ? join(previous, name) : undefined;
    if (prev && (await reflink(prev, join(dest, name)))) reflinked.push(name);
    else copies.push(name);
  }
  const patched = await patchImages(
    reflinked.map((n) => [join(staging, n), join(previous!, n), join(dest, n)]),
    PATCH_LIMIT,
    tool.patch,
  );
  for (const [i, name] of reflinked.entries()) {
    const r = patched[i]!;
    if (r.moved) copies.push(name);
    else stats.bytesWritten += r.written;
  }
  // Copied pages images are deduplicated on their own (hard links in a side
  // directory): forkd-dedupe counts every range it shares, and the patched
  // images share everything already, which would swallow the copies' bytes.
  const side = join(dest, '.dedupe');
  await rm(side, { recursive: true, force: true }); // left by an interrupted store
  let toDedupe = 0;
  for (const name of copies) {
    const dst = join(dest, name);
    await copyFile(join(staging, name), dst);
    stats.bytesWritten += (await stat(dst)).size;
    if (previous && isPages(name)) {
      // Dedupe only shares ranges that are on disk: delayed allocation would leave nothing to share yet.
      const fh = await open(dst, 'r');
      await fh.datasync().finally(() => fh.close());
      await mkdir(side, { recursive: true });
      await link(dst, join(side, name));
      toDedupe++;
    }
  }
  if (toDedupe > 0 && previous) {
    try {
      const r = await exec(tool.dedupe, [previous, side]);
      const line = r.stdout.trim().split('\n').pop();
      const shared = line ? Number((JSON.parse(line) as { bytesShared?: number }).bytesShared ?? 0) : 0;
      stats.bytesWritten = Math.max(0, stats.bytesWritten - shared);
    } finally {
      await rm(side, { recursive: true, force: true });
    }
  }
  return stats;
}

export interface PatchResult {
  written: number;
  /** More than the limit differed: the destination is partly patched and must be replaced. */
  moved: boolean;
}

/**
 * Runs forkd-patch over [src, base, dst] triples (one process; dst holds
 * base's content); its output is checked, not trusted. A base that has page
 * sums (`.NAME.sums`, written by the run that stored it, valid for exactly
 * that file) is compared by them and never read: a reflinked image shares
 * extents with the one before it but not its page cache, so reading it
 * was a disk read of the whole image at every snapshot (~200 ms for 115 MB
 * here, against ~30 ms by sums).
 */
export async function patchImages(pairs: Array<[string, string, string]>, limit: number, tool = PATCH_TOOL): Promise<PatchResult[]> {
  if (pairs.length === 0) return [];
  // --sums: each stored image gets its page sums beside it, so the next snapshot never reads it (see forkd-patch).
  const r = await exec(tool, ['--sums', String(limit), ...pairs.flat()]);
  const lines = r.stdout.trim().split('\n');
  if (lines.length !== pairs.length) throw new ForkdError('INTERNAL', `forkd-patch printed ${lines.length} results for ${pairs.length} images`, { cmd: tool, stderrTail: r.stderr.slice(-4000) });
  return lines.map((l) => {
    const j = JSON.parse(l) as { written?: unknown; moved?: unknown };
    if (typeof j.written !== 'number' || typeof j.moved !== 'boolean') throw new ForkdError('INTERNAL', `unexpected forkd-patch output: ${l.slice(0, 200)}`);
    return { written: j.written, moved: j.moved };
  });
}

async function reflink(from: string, to: string): Promise<boolean> {
  try {
    await copyFile(from, to, constants.COPYFILE_FICLONE_FORCE);
    return true;
  } catch {
    return false;
  }
}
