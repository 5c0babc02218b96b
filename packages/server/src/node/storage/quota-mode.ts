import { access, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { btrfsQuotas, QGROUP_TOOL, type DiskQuotas, type QuotaMode } from './disk-quota.js';

/** Exit status of `forkd-qgroup enable-simple` on a kernel without simple quotas. */
const NO_SIMPLE_QUOTAS = 4;

export interface QuotasEnabled {
  mode: QuotaMode;
  /** Quotas were off (a pool made before quotas) or in the other mode. */
  enabled: boolean;
  /** A pool with full qgroups switched to simple quotas. */
  migrated: boolean;
  rescanMs: number;
}

/**
 * Turns quotas on for the pool, in simple mode where the kernel has it
 * (Linux ≥ 6.7) unless `prefer` is `full`; a pool with full qgroups is
 * switched (their limits go with them: every root gets its limit again
 * whenever it starts, and at start-up, see start-up-check.ts). Idempotent
 * and safe to interrupt: a start that finds quotas off turns them on.
 * See docs/ARCHITECTURE.md (Disk quotas) for why simple quotas.
 */
export async function enableQuotas(pool: string, prefer: 'auto' | 'full' = 'auto'): Promise<QuotasEnabled> {
  const sysfs = await qgroupSysfs(pool);
  const current = await currentMode(sysfs);
  if (prefer === 'auto' && (await kernelHasSimpleQuotas())) {
    if (current === 'simple') {
      await sweep(pool);
      return { mode: 'simple', enabled: false, migrated: false, rescanMs: 0 };
    }
    if (current === 'full') await exec(QGROUP_TOOL, ['disable', pool]);
    const r = await exec(QGROUP_TOOL, ['enable-simple', pool], { allowFailure: true });
    if (r.code === 0) {
      await sweep(pool);
      return { mode: 'simple', enabled: true, migrated: current === 'full', rescanMs: 0 };
    }
    if (r.code !== NO_SIMPLE_QUOTAS) throw new ForkdError('INTERNAL', `could not turn simple quotas on: ${r.stderr.trim()}`, { stderrTail: r.stderr });
  } else if (current === 'simple') {
    await exec(QGROUP_TOOL, ['disable', pool]);
  }
  return { mode: 'full', ...(await enableFullQgroups(pool, sysfs)) };
}

/** The quotas of a pool, in the mode they are on in (tests, the benchmark); undefined: off. */
export async function poolQuotas(pool: string): Promise<DiskQuotas | undefined> {
  const mode = await currentMode(await qgroupSysfs(pool));
  return mode === 'off' ? undefined : btrfsQuotas(pool, mode);
}

/** Lineage groups and qgroups of subvolumes that are gone and count nothing (see forkd-qgroup sweep). */
async function sweep(pool: string): Promise<void> {
  await exec(QGROUP_TOOL, ['sweep', pool], { allowFailure: true });
  await exec('btrfs', ['qgroup', 'clear-stale', pool], { allowFailure: true });
}

/** Simple quotas came with Linux 6.7, which lists them among the filesystem's features. */
export async function kernelHasSimpleQuotas(sys = '/sys'): Promise<boolean> {
  return access(join(sys, 'fs/btrfs/features/simple_quota')).then(
    () => true,
    () => false,
  );
}

/** The mode the pool's quotas are in (the sysfs `mode` file came with simple quotas; before it, qgroups were full). */
export async function currentMode(sysfs: string | undefined): Promise<QuotaMode | 'off'> {
  if (!sysfs) return 'off';
  const enabled = await readFile(join(sysfs, 'enabled'), 'utf8').catch(() => undefined);
  if (enabled === undefined) return (await access(sysfs).then(() => true, () => false)) ? 'full' : 'off';
  if (enabled.trim() !== '1') return 'off';
  const mode = (await readFile(join(sysfs, 'mode'), 'utf8').catch(() => 'qgroup')).trim();
  return mode === 'squota' ? 'simple' : 'full';
}

/**
 * Full qgroups: turned on when they are off, the kernel then rescans every
 * extent once, which the daemon waits for, since until it is done the
 * numbers limits are checked against are wrong. Then pins full accounting
 * (see KEEP_ACCOUNTING) and rescans again if the numbers were left
 * inconsistent. Qgroups of subvolumes deleted by an older kernel (newer
 * ones drop them with the subvolume) are cleared.
 */
async function enableFullQgroups(pool: string, sysfs: string | undefined): Promise<{ enabled: boolean; migrated: false; rescanMs: number }> {
  const t0 = performance.now();
  let enabled = false;
  if (!(await quotasOn(pool))) {
    await exec('btrfs', ['quota', 'enable', pool]);
    enabled = true;
  }
  sysfs ??= await qgroupSysfs(pool);
  if (sysfs) await writeFile(join(sysfs, 'drop_subtree_threshold'), String(KEEP_ACCOUNTING)).catch(() => {});
  if (await quotasInconsistent(pool)) await exec('btrfs', ['quota', 'rescan', pool], { allowFailure: true });
  // Also waits for a rescan an interrupted start left running.
  await exec('btrfs', ['quota', 'rescan', '-w', pool]);
  const rescanMs = performance.now() - t0;
  await exec('btrfs', ['qgroup', 'clear-stale', pool], { allowFailure: true });
  return { enabled, migrated: false, rescanMs };
}

/**
 * Since Linux 6.7 the kernel stops accounting (marks every qgroup
 * inconsistent until a rescan) when it drops a subvolume whose tree is 3 or
 * more levels high, rather than walk it: deleting one large sandbox would
 * silently switch every quota off. 8 (BTRFS_MAX_LEVEL) keeps it walking;
 * the cost is cleaner time after deletes (measured in the benchmark). The
 * setting lives in sysfs, per mount: set at every start. Full qgroups only:
 * simple quotas never walk shared trees.
 */
export const KEEP_ACCOUNTING = 8;

/** /sys/fs/btrfs/<fsid>/qgroups of the pool's filesystem, if the kernel has it. */
async function qgroupSysfs(pool: string): Promise<string | undefined> {
  const r = await exec('btrfs', ['filesystem', 'show', pool], { allowFailure: true });
  const fsid = /uuid:\s*([0-9a-f-]{36})/.exec(r.stdout)?.[1];
  return fsid ? join('/sys/fs/btrfs', fsid, 'qgroups') : undefined;
}

/** Whether the kernel stopped accounting (a rescan would be needed for limits to mean anything). Never with simple quotas. */
export async function quotasInconsistent(pool: string): Promise<boolean> {
  const sysfs = await qgroupSysfs(pool);
  return !!sysfs && (await readFile(join(sysfs, 'inconsistent'), 'utf8').catch(() => '0')).trim() === '1';
}

export async function quotasOn(pool: string): Promise<boolean> {
  return (await exec('btrfs', ['qgroup', 'show', pool], { allowFailure: true })).code === 0;
}
