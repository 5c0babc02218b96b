import { constants, existsSync } from 'node:fs';
import { chmod, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../../shared/logger.js';
import { CGROUP_ROOT } from './cgroups.js';
import { cloneCpusetToChildren } from './cpuset-parent.js';
import { readCgroupV1Layout } from './v1-layout.js';

/**
 * Makes each level of `parent` searchable (0755) in each of `hierarchies`
 * (directory names under `root`; '' for a unified root) where it exists, and
 * returns those it changed. CRIU opens a sandbox's cgroup from inside its user
 * namespace at a restore, through these levels: one made 0700 (by an older
 * forkd, or under another umask) failed every restore on the host with
 * "open_tree ... Permission denied", and mkdir never repairs a level that exists.
 */
export async function searchableCgroupParents(parent: string, hierarchies: readonly string[], root = CGROUP_ROOT): Promise<string[]> {
  const changed = await unsearchableCgroupParents(parent, hierarchies, async (dir) => (await stat(dir).catch(() => undefined))?.mode, root);
  for (const dir of changed) await chmod(dir, 0o755);
  return changed;
}

/** The levels of `parent` (as searchableCgroupParents walks them) that exist and are not 0755-searchable; `mode` says a directory's (undefined: absent). */
export async function unsearchableCgroupParents(parent: string, hierarchies: readonly string[], mode: (dir: string) => Promise<number | undefined>, root = CGROUP_ROOT): Promise<string[]> {
  const found: string[] = [];
  for (const h of hierarchies) {
    let dir = join(root, h);
    for (const level of parent.split('/').filter(Boolean)) {
      dir = join(dir, level);
      const m = await mode(dir);
      if (m === undefined || (m & constants.S_IFMT) !== constants.S_IFDIR) break;
      if ((m & 0o055) !== 0o055) found.push(dir);
    }
  }
  return found;
}

/** The sandboxes' parent cgroup made ready at the node's start: cpuset cloned to children (v1), every level searchable. */
export async function prepareCgroupParent(parent: string, log: Pick<Logger, 'warn'>): Promise<void> {
  await cloneCpusetToChildren(parent);
  const v1 = await readCgroupV1Layout();
  const hierarchies = v1 ? [...v1.hierarchies, ...(existsSync(join(CGROUP_ROOT, 'unified')) ? ['unified'] : [])] : [''];
  const repaired = await searchableCgroupParents(parent, hierarchies);
  if (repaired.length) log.warn("the sandboxes' parent cgroup was not searchable, so every restore into a user namespace failed: made 0755", { dirs: repaired });
}
