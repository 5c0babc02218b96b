import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { REPO_ROOT } from '../../shared/config.js';

/**
 * `simple`: Btrfs simple quotas (Linux ≥ 6.7): an extent is charged for its
 * life to the subvolume that wrote it, nothing is walked on a delete.
 * `full`: classic qgroups (referenced/exclusive, kept by walking the
 * backrefs of every changed extent: O(subvolumes sharing it)).
 */
export type QuotaMode = 'simple' | 'full';

/** A qgroup's numbers (bytes on disk, after compression). */
export interface QgroupUsage {
  /** `0/<subvolume id>`, or with simple quotas the volume's lineage group `1/<n>`. */
  qgroup: string;
  /** Full qgroups: everything reachable from the volume, shared extents included. Simple: what the group's volumes wrote that is still stored. */
  referencedBytes: number;
  exclusiveBytes: number;
  /** The limit on referenced bytes; undefined: none. */
  limitBytes: number | undefined;
}

/**
 * Disk quotas of volumes (sandbox roots). What a limit bounds depends on the
 * mode (see docs/ARCHITECTURE.md, Disk quotas):
 *
 * - `full`: what a root *references*, its template's bytes plus whatever it
 *   wrote, so `limit = template's referenced + quota`. Unlike a limit on
 *   exclusive bytes, that number does not drop when a snapshot starts
 *   sharing the root's extents and does not grow when a parent or a
 *   snapshot is deleted and a fork becomes the only owner of what it shares.
 * - `simple`: what the sandbox wrote that is still stored, so
 *   `limit = quota`. A root made from a snapshot starts at zero (the
 *   snapshot's extents stay charged to whoever wrote them), so every root a
 *   sandbox gets (resume, rewind) joins its *lineage group*, a level-1
 *   qgroup, and the limit is on that group.
 */
export interface DiskQuotas {
  readonly mode: QuotaMode;
  /**
   * Limits the qgroup (from usage or limitForStart) to `limitBytes`
   * (undefined: no limit). By id through the pool's root, not through the
   * volume's path: the ioctl's transaction would be charged to the volume,
   * and one already over its limit could then never have it changed (EDQUOT).
   */
  setLimit(qgroup: string, limitBytes: number | undefined): Promise<void>;
  usage(path: string): Promise<QgroupUsage | undefined>;
  /**
   * One call for a root about to start: limit = max(exactBytes, used) +
   * headroomBytes (headroom 0, simple mode: exactly exactBytes). Simple
   * mode: the root joins its lineage group, else `lineage` (the group of the
   * root it replaces), else a new one. Undefined: no qgroup.
   */
  limitForStart(path: string, exactBytes: number, headroomBytes: number, lineage?: string): Promise<{ qgroup: string; referencedBytes: number } | undefined>;
  /** Simple mode: the lineage group of a root (undefined: none, or full mode). */
  lineageOf(path: string): Promise<string | undefined>;
}

/** forkd-qgroup (host-tools): the btrfs tool's qgroup calls by ioctl and sysfs, one small process each. */
export const QGROUP_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-qgroup');

/** Exit status of forkd-qgroup when the volume has no qgroup (quotas off, not a subvolume, no lineage group). */
const NO_QGROUP = 3;

/** Quotas on the subvolumes of a pool with quotas on in `mode` (enableQuotas), through forkd-qgroup. */
export function btrfsQuotas(pool: string, mode: QuotaMode): DiskQuotas {
  const tool = async (args: string[]) => {
    const r = await exec(QGROUP_TOOL, args, { allowFailure: true });
    if (r.code === NO_QGROUP) return undefined;
    if (r.code !== 0) throw new ForkdError('INTERNAL', `forkd-qgroup ${args[0]} failed: ${r.stderr.trim()}`, { stderrTail: r.stderr });
    return r.stdout.trim();
  };
  return {
    mode,
    async setLimit(qgroup, limitBytes) {
      if (!/^[01]\/\d+$/.test(qgroup) || (limitBytes !== undefined && (!Number.isSafeInteger(limitBytes) || limitBytes <= 0))) throw new ForkdError('INTERNAL', `invalid qgroup limit ${limitBytes} for ${qgroup}`);
      await exec(QGROUP_TOOL, ['limit-id', pool, qgroup, limitBytes === undefined ? 'none' : String(limitBytes)]);
    },
    async usage(path) {
      const out = await tool(['show', pool, path]);
      return out === undefined ? undefined : parseQgroupTool(out);
    },
    async limitForStart(path, exactBytes, headroomBytes, lineage) {
      if (!Number.isSafeInteger(exactBytes) || exactBytes <= 0 || !Number.isSafeInteger(headroomBytes) || headroomBytes < 0) throw new ForkdError('INTERNAL', `invalid qgroup start limit ${exactBytes}+${headroomBytes}`);
      if (lineage !== undefined && !/^1\/\d+$/.test(lineage)) throw new ForkdError('INTERNAL', `invalid lineage group ${lineage}`);
      const out = await tool(mode === 'simple' ? ['start-lineage', pool, path, lineage ?? '-', String(exactBytes), String(headroomBytes)] : ['start', pool, path, String(exactBytes), String(headroomBytes)]);
      if (out === undefined) return undefined;
      const [id, used] = out.split(' ');
      return { qgroup: mode === 'simple' ? id! : `0/${id}`, referencedBytes: Number(used) };
    },
    async lineageOf(path) {
      return mode === 'simple' ? tool(['group', pool, path]) : undefined;
    },
  };
}

/** `forkd-qgroup show`: "LEVEL/ID REFERENCED EXCLUSIVE LIMIT|none". */
export function parseQgroupTool(out: string): QgroupUsage | undefined {
  const m = /^([01]\/\d+) (\d+) (\d+) (\d+|none)$/.exec(out.trim());
  if (!m) return undefined;
  return { qgroup: m[1]!, referencedBytes: Number(m[2]), exclusiveBytes: Number(m[3]), limitBytes: m[4] === 'none' ? undefined : Number(m[4]) };
}
