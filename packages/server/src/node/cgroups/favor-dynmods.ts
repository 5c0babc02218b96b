import { readFile } from 'node:fs/promises';
import { exec } from '../../shared/exec.js';
import { parseMountinfo, type MountEntry } from '../../shared/mountinfo.js';

/** The kernel's list of the cgroup mount options it knows (≥ 6.0 lists favordynmods). */
export const CGROUP_FEATURES = '/sys/kernel/cgroup/features';
const OPTION = 'favordynmods';

export type FavorDynmodsResult =
  | { outcome: 'enabled' | 'already'; path: string }
  | { outcome: 'unsupported' | 'no-cgroup2' | 'left' }
  | { outcome: 'failed'; path: string; detail: string };

/** The first cgroup2 mount in a mountinfo text, or undefined (a host with cgroup v1 only). */
export function findCgroup2Mount(mountinfo: string): MountEntry | undefined {
  return parseMountinfo(mountinfo).find((e) => e.fstype === 'cgroup2');
}

/** What the kernel's feature list and mountinfo say of favordynmods (the node's start and `forkd doctor` both read it so). */
export type FavorDynmodsState = { outcome: 'unsupported' } | { outcome: 'no-cgroup2' } | { outcome: 'on' | 'off'; mount: MountEntry };

export function favorDynmodsState(features: string, mountinfo: string): FavorDynmodsState {
  if (!features.split('\n').includes(OPTION)) return { outcome: 'unsupported' };
  const mount = findCgroup2Mount(mountinfo);
  if (!mount) return { outcome: 'no-cgroup2' };
  return { outcome: mount.superOptions.includes(OPTION) ? 'on' : 'off', mount };
}

/**
 * The `-o` of a remount that adds favordynmods and keeps every other option (the mount's own flags and the
 * hierarchy's: a remount that leaves one out clears it), or undefined when it is set.
 */
export function favorDynmodsRemountOptions(m: Pick<MountEntry, 'options' | 'superOptions'>): string | undefined {
  if (m.superOptions.includes(OPTION)) return undefined;
  return ['remount', ...new Set([...m.options, ...m.superOptions, OPTION])].join(',');
}

/**
 * Turns on the cgroup mount option favordynmods (kernel ≥ 6.0) by remounting
 * the host's cgroup2 hierarchy with it, every option it had kept.
 *
 * Without it every move of a process into a cgroup (runc's start of a
 * sandbox, its restore, CRIU's own moves) write-locks a lock every fork and
 * exit on the host read-locks, and that waits for an RCU grace period: 5-14
 * ms measured here per runc call, on the path of every create, resume, fork
 * and rewind. With it the lock is per process (kernel ≥ 6.18) or kept in the
 * mode writers do not wait for (6.0-6.17), at some cost to forks and exits.
 * The lock is global, so the cgroup2 mount of a hybrid host (its
 * `unified`) serves the v1 hierarchies too. The kernel cannot turn it off
 * again once on (6.18 says so in its log), so this is a host setting forkd
 * changes, as it does the conntrack hash; FORKD_CGROUP_FAVORDYNMODS=leave
 * keeps the host's.
 */
export async function favorDynmods(opts: { leave?: boolean; features?: string; mountinfo?: string } = {}): Promise<FavorDynmodsResult> {
  if (opts.leave) return { outcome: 'left' };
  const mountinfo = () => readFile(opts.mountinfo ?? '/proc/self/mountinfo', 'utf8');
  const state = favorDynmodsState(await readFile(opts.features ?? CGROUP_FEATURES, 'utf8').catch(() => ''), await mountinfo());
  if (state.outcome === 'unsupported' || state.outcome === 'no-cgroup2') return { outcome: state.outcome };
  const { mount } = state;
  const options = favorDynmodsRemountOptions(mount);
  if (!options) return { outcome: 'already', path: mount.mountPoint };
  // Source and target both given: mount(8) then passes exactly these options, merging nothing of its own.
  const r = await exec('mount', ['-t', 'cgroup2', '-o', options, 'cgroup2', mount.mountPoint], { allowFailure: true });
  if (r.code !== 0) return { outcome: 'failed', path: mount.mountPoint, detail: r.stderr.trim().slice(-300) };
  // Outside the initial cgroup namespace the kernel takes the remount and ignores the option.
  const after = findCgroup2Mount(await mountinfo());
  if (!after?.superOptions.includes(OPTION)) return { outcome: 'failed', path: mount.mountPoint, detail: 'the remount was taken but the option is not on (not the initial cgroup namespace?)' };
  return { outcome: 'enabled', path: mount.mountPoint };
}
