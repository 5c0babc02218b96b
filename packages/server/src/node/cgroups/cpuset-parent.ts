import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CGROUP_ROOT } from './cgroups.js';
import { makeCgroupV1Dirs } from './v1-layout.js';

/**
 * On a cgroup v1 host, makes the sandboxes' parent in the cpuset hierarchy
 * hand its CPUs and memory nodes to each new child (`cgroup.clone_children`),
 * every level of it given them first. Without it a child starts empty and
 * runc writes `cpuset.cpus` and `cpuset.mems` into it, and the kernel checks
 * each such write against every sibling and rebuilds the scheduler domains
 * walking every cpuset on the host: with thousands of sandboxes, a create's
 * largest kernel cost. A clone at mkdir does neither. Returns whether there
 * was a cpuset hierarchy (a v2 host has none: its cpuset is not inherited this
 * way, nor written by runc when unset).
 */
export async function cloneCpusetToChildren(parent: string, root = CGROUP_ROOT): Promise<boolean> {
  const hierarchy = join(root, 'cpuset');
  if ((await readFile(join(hierarchy, 'cpuset.cpus'), 'utf8').catch(() => undefined)) === undefined) return false;
  // Made as runc makes them (0755 whatever the daemon's umask): CRIU opens a sandbox's cgroup from inside
  // its user namespace at a restore.
  await makeCgroupV1Dirs(parent, ['cpuset'], root);
  let dir = hierarchy;
  for (const level of parent.split('/').filter(Boolean)) {
    const above = dir;
    dir = join(dir, level);
    for (const file of ['cpuset.cpus', 'cpuset.mems']) {
      if ((await readFile(join(dir, file), 'utf8')).trim() === '') await writeFile(join(dir, file), await readFile(join(above, file), 'utf8'));
    }
  }
  await writeFile(join(dir, 'cgroup.clone_children'), '1');
  return true;
}
