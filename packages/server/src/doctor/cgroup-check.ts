import { join } from 'node:path';
import { CGROUP_CONTROLLERS, CGROUP_ROOT, cgroupVersion, swapAccountingIn } from '../node/cgroups/cgroups.js';
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
