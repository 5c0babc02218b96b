import { join } from 'node:path';
import { poolLayout } from '../storage/pool-layout.js';
import { incompatibilities, type InstalledVersions } from './snapshot-compat.js';
import { parseStamp, STAMP_FILE } from './snapshot-stamp.js';

/** What reading a pool's checkpoints needs: the real filesystem, or doctor's view of the host. */
export interface PoolReader {
  list(path: string): Promise<string[]>;
  read(path: string): Promise<string | undefined>;
}

/** A checkpoint the installed versions cannot restore: a snapshot's memory or a warm template's images. */
export interface IncompatibleCheckpoint {
  kind: 'snapshot' | 'template';
  name: string;
  why: string[];
}

/** Checkpoint image directories of a pool, drafts left out. */
async function checkpointDirs(pool: string, fs: PoolReader): Promise<{ kind: IncompatibleCheckpoint['kind']; name: string; dir: string }[]> {
  const visible = (names: string[]) => names.filter((n) => !n.startsWith('.tmp-'));
  const snaps = visible(await fs.list(join(pool, poolLayout.snapshots))).map((name) => ({ kind: 'snapshot' as const, name, dir: join(pool, poolLayout.snapshot(name), 'memory') }));
  const tpls = visible(await fs.list(join(pool, poolLayout.templateImagesDir))).map((name) => ({ kind: 'template' as const, name, dir: join(pool, poolLayout.templateImages(name)) }));
  return [...snaps, ...tpls];
}

/**
 * The checkpoints in `pool` that the installed versions cannot restore (see
 * snapshot-compat.ts), for doctor and the daemon's start to say before an
 * upgrade or a downgrade loses them. Unstamped ones (older forkd) pass.
 */
export async function incompatibleCheckpoints(pool: string, now: InstalledVersions, fs: PoolReader): Promise<IncompatibleCheckpoint[]> {
  const out: IncompatibleCheckpoint[] = [];
  for (const c of await checkpointDirs(pool, fs)) {
    const text = await fs.read(join(c.dir, STAMP_FILE));
    if (text === undefined) continue;
    const read = parseStamp(Buffer.from(text, 'utf8'));
    const why = read.kind === 'stamped' ? incompatibilities(read.stamp, now) : read.kind === 'malformed' ? [`its version stamp is malformed (${read.why})`] : [];
    if (why.length) out.push({ kind: c.kind, name: c.name, why });
  }
  return out;
}
