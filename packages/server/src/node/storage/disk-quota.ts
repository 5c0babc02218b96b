import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { REPO_ROOT } from '../../shared/config.js';

/** A volume's qgroup numbers (bytes on disk, after compression). */
export interface QgroupUsage {
  /** The qgroup id, `0/<subvolume id>`. */
  qgroup: string;
  /** Everything reachable from the volume, shared extents included. */
  referencedBytes: number;
  exclusiveBytes: number;
  /** The limit on referenced bytes; undefined: none. */
  limitBytes: number | undefined;
}

/**
 * Disk quotas of volumes (sandbox roots). The limit is on what a root
 * *references*: its template's bytes plus whatever it wrote, so
 * `limit = template's referenced + quota`. Unlike a limit on exclusive
 * bytes, that number does not drop when a snapshot starts sharing the
 * root's extents (a timeline snapshot would reset the quota every 5
 * minutes) and does not grow when a parent or a snapshot is deleted and a
 * fork becomes the only owner of what it shares (a fork could not write
 * any more through no doing of its own). See docs/ARCHITECTURE.md.
 */
export interface DiskQuotas {
  /**
   * Limits what the qgroup (from usage) may reference to `limitBytes`
   * (undefined: no limit). By id through the pool's root, not through the
   * volume's path: the ioctl's transaction would be charged to the volume,
   * and one already over its limit could then never have it changed (EDQUOT).
   */
  setLimit(qgroup: string, limitBytes: number | undefined): Promise<void>;
  usage(path: string): Promise<QgroupUsage | undefined>;
  /** One call for a root about to start: limit = max(exactBytes, referenced) + headroomBytes. Undefined: no qgroup. */
  limitForStart(path: string, exactBytes: number, headroomBytes: number): Promise<{ qgroup: string; referencedBytes: number } | undefined>;
}

/**
 * Turns Btrfs quota groups on for the pool when they are off (a pool made
 * before quotas): the kernel then rescans every extent once, which the
 * daemon waits for, since until it is done the numbers limits are checked
 * against are wrong. Then pins full accounting (see KEEP_ACCOUNTING) and
 * rescans again if the numbers were left inconsistent. Qgroups of
 * subvolumes deleted by an older kernel (newer ones drop them with the
 * subvolume) are cleared. Resolves with what it did.
 */
export async function enableQuotas(pool: string): Promise<{ enabled: boolean; rescanMs: number }> {
  const t0 = performance.now();
  let enabled = false;
  if (!(await quotasOn(pool))) {
    await exec('btrfs', ['quota', 'enable', pool]);
    enabled = true;
  }
  const sysfs = await qgroupSysfs(pool);
  if (sysfs) await writeFile(join(sysfs, 'drop_subtree_threshold'), String(KEEP_ACCOUNTING)).catch(() => {});
  const inconsistent = sysfs ? (await readFile(join(sysfs, 'inconsistent'), 'utf8').catch(() => '0')).trim() === '1' : false;
  if (inconsistent) await exec('btrfs', ['quota', 'rescan', pool], { allowFailure: true });
  // Also waits for a rescan an interrupted start left running.
  await exec('btrfs', ['quota', 'rescan', '-w', pool]);
  const rescanMs = performance.now() - t0;
  await exec('btrfs', ['qgroup', 'clear-stale', pool], { allowFailure: true });
  return { enabled, rescanMs };
}

/**
 * Since Linux 6.7 the kernel stops accounting (marks every qgroup
 * inconsistent until a rescan) when it drops a subvolume whose tree is 3 or
 * more levels high, rather than walk it: deleting one large sandbox would
 * silently switch every quota off. 8 (BTRFS_MAX_LEVEL) keeps it walking;
 * the cost is cleaner time after deletes (measured in the benchmark). The
 * setting lives in sysfs, per mount: set at every start.
 */
export const KEEP_ACCOUNTING = 8;

/** /sys/fs/btrfs/<fsid>/qgroups of the pool's filesystem, if the kernel has it. */
async function qgroupSysfs(pool: string): Promise<string | undefined> {
  const r = await exec('btrfs', ['filesystem', 'show', pool], { allowFailure: true });
  const fsid = /uuid:\s*([0-9a-f-]{36})/.exec(r.stdout)?.[1];
  return fsid ? join('/sys/fs/btrfs', fsid, 'qgroups') : undefined;
}

/** Whether the kernel stopped accounting (a rescan would be needed for limits to mean anything). */
export async function quotasInconsistent(pool: string): Promise<boolean> {
  const sysfs = await qgroupSysfs(pool);
  return !!sysfs && (await readFile(join(sysfs, 'inconsistent'), 'utf8').catch(() => '0')).trim() === '1';
}

export async function quotasOn(pool: string): Promise<boolean> {
  return (await exec('btrfs', ['qgroup', 'show', pool], { allowFailure: true })).code === 0;
}

/** forkd-qgroup (host-tools): the btrfs tool's qgroup calls by ioctl and sysfs, one small process each. */
export const QGROUP_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-qgroup');

/** Exit status of forkd-qgroup when the volume has no qgroup (quotas off, not a subvolume). */
const NO_QGROUP = 3;

/** Quotas on the subvolumes of a pool with quotas on (enableQuotas), through forkd-qgroup. */
export function btrfsQuotas(pool: string): DiskQuotas {
  return {
    async setLimit(qgroup, limitBytes) {
      const id = /^0\/(\d+)$/.exec(qgroup)?.[1];
      if (!id || (limitBytes !== undefined && (!Number.isSafeInteger(limitBytes) || limitBytes <= 0))) throw new ForkdError('INTERNAL', `invalid qgroup limit ${limitBytes} for ${qgroup}`);
      await exec(QGROUP_TOOL, ['limit-id', pool, id, limitBytes === undefined ? 'none' : String(limitBytes)]);
    },
    async usage(path) {
      const r = await exec(QGROUP_TOOL, ['show', pool, path], { allowFailure: true });
      if (r.code === NO_QGROUP) return undefined;
      if (r.code !== 0) throw new ForkdError('INTERNAL', `forkd-qgroup show failed: ${r.stderr.trim()}`, { stderrTail: r.stderr });
      return parseQgroupTool(r.stdout);
    },
    async limitForStart(path, exactBytes, headroomBytes) {
      if (!Number.isSafeInteger(exactBytes) || exactBytes <= 0 || !Number.isSafeInteger(headroomBytes) || headroomBytes < 0) throw new ForkdError('INTERNAL', `invalid qgroup start limit ${exactBytes}+${headroomBytes}`);
      const r = await exec(QGROUP_TOOL, ['start', pool, path, String(exactBytes), String(headroomBytes)], { allowFailure: true });
      if (r.code === NO_QGROUP) return undefined;
      if (r.code !== 0) throw new ForkdError('INTERNAL', `forkd-qgroup start failed: ${r.stderr.trim()}`, { stderrTail: r.stderr });
      const [id, referenced] = r.stdout.trim().split(' ');
      return { qgroup: `0/${id}`, referencedBytes: Number(referenced) };
    },
  };
}

/** `forkd-qgroup show`: "ID REFERENCED EXCLUSIVE LIMIT|none". */
export function parseQgroupTool(out: string): QgroupUsage | undefined {
  const m = /^(\d+) (\d+) (\d+) (\d+|none)$/.exec(out.trim());
  if (!m) return undefined;
  return { qgroup: `0/${m[1]}`, referencedBytes: Number(m[2]), exclusiveBytes: Number(m[3]), limitBytes: m[4] === 'none' ? undefined : Number(m[4]) };
}
