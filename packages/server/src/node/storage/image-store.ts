import { copyFile, mkdir, open, readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../../shared/config.js';
import { exec } from '../../shared/exec.js';

export const DEDUPE_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-dedupe');

export interface StoreStats {
  files: number;
  bytesTotal: number;
  /** Bytes of pages found equal to the previous snapshot's and shared with it. */
  bytesShared: number;
}

/**
 * Moves CRIU images from a staging directory into the pool and makes their
 * pages share storage with the previous snapshot's images. This kernel has no
 * soft-dirty tracking, so CRIU cannot dump incrementally; instead
 * `forkd-dedupe` (packages/host-tools) finds equal pages — also ones that
 * moved — and has Btrfs share them (FIDEDUPERANGE: the kernel verifies the
 * bytes, contents never change). Deleting either snapshot later never affects
 * the other: extents are reference-counted.
 */
export async function storeImages(staging: string, dest: string, previous: string | undefined, tool = DEDUPE_TOOL): Promise<StoreStats> {
  await mkdir(dest, { recursive: true });
  const stats: StoreStats = { files: 0, bytesTotal: 0, bytesShared: 0 };
  for (const name of await readdir(staging)) {
    const to = join(dest, name);
    await copyFile(join(staging, name), to);
    // Dedupe only shares ranges that are on disk: delayed allocation would leave nothing to share yet.
    if (previous && name.startsWith('pages-')) {
      const fh = await open(to, 'r');
      await fh.datasync().finally(() => fh.close());
    }
    stats.files++;
    stats.bytesTotal += (await stat(join(staging, name))).size;
  }
  await rm(staging, { recursive: true, force: true });
  if (previous) {
    const r = await exec(tool, [previous, dest]);
    const out = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as { bytesShared?: number };
    stats.bytesShared = Math.min(out.bytesShared ?? 0, stats.bytesTotal);
  }
  return stats;
}
