import { join } from 'node:path';
import { CGROUP_CONTROLLERS, CGROUP_ROOT, cgroupVersion, swapAccountingIn } from '../node/cgroups/cgroups.js';
import { CGROUP_FEATURES, favorDynmodsState } from '../node/cgroups/favor-dynmods.js';
import { unsearchableCgroupParents } from '../node/cgroups/cgroup-parent.js';
import { parseV1Hierarchies } from '../node/cgroups/v1-layout.js';
import { finding, type HostCheck } from './host-check.js';

/** The hierarchy and the controllers sandboxes' limits need (cgroupVersion and cgroupDirs read the same places). */
export const cgroupCheck: HostCheck = async ({ host }) => {
  const root = join(host.root, CGROUP_ROOT);
  const version = cgroupVersion(root);
  const wanted = CGROUP_CONTROLLERS[version];
  let missing: string[];
  if (version === 2) {
    const have = ((await host.read(join(CGROUP_ROOT, 'cgroup.controllers'))) ?? '').trim().split(/\s+/);
    missing = wanted.filter((c) => !have.includes(c));
  } else {
    missing = [];
    for (const c of wanted) if ((await host.presence(join(CGROUP_ROOT, c))) !== 'present') missing.push(c);
  }
  if (missing.length) {
    const fix = version === 2 ? 'enable them in the kernel (cgroup_enable=… on its command line) and in the root\'s cgroup.subtree_control' : 'mount the missing v1 hierarchies under /sys/fs/cgroup, or boot with the unified hierarchy (systemd.unified_cgroup_hierarchy=1)';
    return finding('cgroups', 'error', `cgroup v${version} without the ${missing.join(', ')} controller${missing.length > 1 ? 's' : ''}: sandboxes' limits cannot be set`, fix);
  }
  if (!swapAccountingIn(root)) return finding('cgroups', 'warn', 'cgroup v1 without swap accounting: a sandbox\'s memory limit does not bound its swap', 'boot with swapaccount=1, or with the unified hierarchy (cgroup v2)');
  return finding('cgroups', 'ok', `cgroup v${version} (${wanted.join(', ')})`);
};

/**
 * Whether a sandbox's user namespace can pass through every level of the
 * sandboxes' parent cgroup: CRIU opens a sandbox's cgroup from inside it at
 * each restore. forkd serve makes them 0755 at its start (cgroup-parent.ts);
 * a level changed since fails every resume, fork and rewind until then.
 */
export const cgroupParentCheck: HostCheck = async ({ host, config }) => {
  const v1 = parseV1Hierarchies((await host.read('/proc/self/mountinfo')) ?? '');
  const unified = v1.length && (await host.presence(join(CGROUP_ROOT, 'unified'))) === 'present' ? ['unified'] : [];
  const hierarchies = v1.length ? [...v1, ...unified] : [''];
  const bad = await unsearchableCgroupParents(config.cgroupParent, hierarchies, (dir) => host.mode(dir));
  if (!bad.length) return finding('cgroup-parent', 'ok', `the sandboxes' parent cgroup (${config.cgroupParent}) is searchable from their user namespaces, or not made yet`);
  return finding('cgroup-parent', 'warn', `${bad.length} level${bad.length > 1 ? 's' : ''} of the sandboxes' parent cgroup cannot be searched from a sandbox's user namespace (${bad.join(', ')}): every restore into one (resume, fork, rewind) fails with "open_tree ... Permission denied"`, `chmod 755 ${bad.join(' ')}, or restart forkd serve (it does so at start)`);
};

/** Whether a move into a cgroup waits for an RCU grace period (the daemon turns favordynmods on at start unless told to leave it). */
export const cgroupDynmodsCheck: HostCheck = async ({ host, config }) => {
  const state = favorDynmodsState((await host.read(CGROUP_FEATURES)) ?? '', (await host.read('/proc/self/mountinfo')) ?? '');
  if (state.outcome === 'unsupported') return finding('cgroup-migrations', 'ok', 'the kernel has no favordynmods (before 6.0): each sandbox start and restore waits for an RCU grace period');
  if (state.outcome === 'no-cgroup2') return finding('cgroup-migrations', 'ok', 'no cgroup2 mount to turn favordynmods on with: each sandbox start and restore waits for an RCU grace period');
  const path = state.mount.mountPoint;
  if (state.outcome === 'on') return finding('cgroup-migrations', 'ok', `${path} has favordynmods`);
  if (config.cgroupFavorDynmods === 'enable') return finding('cgroup-migrations', 'ok', `${path} has no favordynmods now; forkd serve turns it on at start`);
  return finding('cgroup-migrations', 'warn', `${path} has no favordynmods (FORKD_CGROUP_FAVORDYNMODS=leave): each sandbox start, resume, fork and rewind waits 5-15 ms for an RCU grace period`, `mount -o remount,favordynmods ${path}, or unset FORKD_CGROUP_FAVORDYNMODS for forkd to do it`);
};
