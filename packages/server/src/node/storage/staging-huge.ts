import { readFile, realpath } from 'node:fs/promises';
import { exec } from '../../shared/exec.js';
import type { Logger } from '../../shared/logger.js';
import { mountOf, parseMountinfo, type MountEntry } from '../../shared/mountinfo.js';

/** The kernel's switch for huge pages in tmpfs and shared memory (absent: no transparent huge pages). */
export const SHMEM_ENABLED = '/sys/kernel/mm/transparent_hugepage/shmem_enabled';
const OPTION = 'huge=within_size';

export type StagingHugeResult =
  | { outcome: 'enabled' | 'already'; path: string }
  | { outcome: 'left' | 'not-tmpfs' | 'unsupported' }
  | { outcome: 'failed'; path: string; detail: string };

/** Whether a tmpfs already gives large pages to files (any `huge=` but never; the host's choice is kept). */
export function tmpfsHuge(m: Pick<MountEntry, 'superOptions'>): boolean {
  return m.superOptions.some((o) => o.startsWith('huge=') && o !== 'huge=never');
}

/** The selected value of shmem_enabled ("always within_size advise [never] deny force" → never). */
export function selectedShmemMode(text: string): string | undefined {
  return /\[([a-z_]+)\]/.exec(text)?.[1];
}

/** What the kernel and mountinfo say of large pages for the staging directory at `path` (the node's start and `forkd doctor` both read it so). */
export type StagingHugeState = { outcome: 'unsupported' } | { outcome: 'not-tmpfs' } | { outcome: 'on' | 'off'; mount: MountEntry };

export function stagingHugeState(mountinfo: string, shmemEnabled: string, path: string): StagingHugeState {
  const mode = selectedShmemMode(shmemEnabled);
  if (!mode || mode === 'deny') return { outcome: 'unsupported' };
  const mount = mountOf(parseMountinfo(mountinfo), path);
  if (!mount || mount.fstype !== 'tmpfs') return { outcome: 'not-tmpfs' };
  return { outcome: mode === 'force' || tmpfsHuge(mount) ? 'on' : 'off', mount };
}

/**
 * Gives the tmpfs the CRIU staging directory is on (/dev/shm by default)
 * large pages for files that fill them (`huge=within_size`; a remount of
 * tmpfs changes only the options it names).
 *
 * CRIU writes every page of a sandbox's memory there inside the freeze, and
 * the page store hashes all of it after: with 4 KiB pages a 100 MB image is
 * 25,600 page allocations and as many TLB fills, which on a host whose TLB
 * misses go through the hypervisor made a 100 MB freeze ~12 % longer
 * (116 → 102 ms measured). within_size allocates a large page only where the
 * file already covers it, so small files (POSIX shared memory, CRIU's small
 * images) take no more memory than before. A tmpfs the host already gave
 * huge pages, or a kernel without them (`deny`, or no transparent huge pages),
 * is left as it is, and so is everything with FORKD_STAGING_HUGE_PAGES=leave.
 */
export async function stagingHugePages(path: string, opts: { leave?: boolean; mountinfo?: string; shmemEnabled?: string } = {}): Promise<StagingHugeResult> {
  if (opts.leave) return { outcome: 'left' };
  const where = await realpath(path).catch(() => path);
  const shmem = await readFile(opts.shmemEnabled ?? SHMEM_ENABLED, 'utf8').catch(() => '');
  const mountinfo = () => readFile(opts.mountinfo ?? '/proc/self/mountinfo', 'utf8');
  const state = stagingHugeState(await mountinfo(), shmem, where);
  if (state.outcome === 'unsupported' || state.outcome === 'not-tmpfs') return { outcome: state.outcome };
  const { mount } = state;
  if (state.outcome === 'on') return { outcome: 'already', path: mount.mountPoint };
  const r = await exec('mount', ['-o', `remount,${OPTION}`, mount.mountPoint], { allowFailure: true });
  if (r.code !== 0) return { outcome: 'failed', path: mount.mountPoint, detail: r.stderr.trim().slice(-300) };
  if (stagingHugeState(await mountinfo(), shmem, where).outcome !== 'on') return { outcome: 'failed', path: mount.mountPoint, detail: 'the remount was taken but the option is not on' };
  return { outcome: 'enabled', path: mount.mountPoint };
}

/** What the node's start says of it: a change it made, or one it could not. */
export function logStagingHuge(r: StagingHugeResult, logger: Pick<Logger, 'info' | 'warn'>): void {
  if (r.outcome === 'enabled') logger.info('the CRIU staging tmpfs was remounted with huge=within_size: memory dumps write and hash large pages (FORKD_STAGING_HUGE_PAGES=leave keeps the host\'s setting)', { path: r.path });
  if (r.outcome === 'failed') logger.warn('the CRIU staging tmpfs could not be given large pages; dumps work as before, a little slower', { path: r.path, detail: r.detail });
}
