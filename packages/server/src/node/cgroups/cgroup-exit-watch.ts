import { existsSync, watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CGROUP_ROOT, cgroupVersion } from './cgroups.js';


/**
 * The `cgroup.events` file of a cgroup path in the unified hierarchy: v2's
 * own, or a hybrid host's (v1 controllers, runc also places every sandbox in
 * /sys/fs/cgroup/unified). Undefined where there is none.
 */
export function unifiedEventsFile(path: string): string | undefined {
  const rel = path.replace(/^\/+/, '');
  if (cgroupVersion() === 2) return join(CGROUP_ROOT, rel, 'cgroup.events');
  return existsSync(join(CGROUP_ROOT, 'unified', 'cgroup.controllers')) ? join(CGROUP_ROOT, 'unified', rel, 'cgroup.events') : undefined;
}

/**
 * Calls `onEmpty` once when the cgroup has no process left (`populated 0`
 * in cgroup.events, which the kernel announces through inotify) or its file
 * can no longer be read (the cgroup is gone). An idle cgroup costs one
 * inotify watch and no reads. Returns the stop, or undefined when it cannot
 * be watched (no unified hierarchy, no such cgroup, inotify watches used
 * up): the caller then looks for itself.
 */
export function watchCgroupEmpty(path: string, onEmpty: () => void): (() => void) | undefined {
  const file = unifiedEventsFile(path);
  if (!file || !existsSync(file)) return undefined;
  let done = false;
  let w: FSWatcher | undefined;
  const stop = () => {
    done = true;
    w?.close();
  };
  const fire = () => {
    if (done) return;
    stop();
    onEmpty();
  };
  // Every change (a freeze, a thaw) is a read; only an empty or vanished cgroup fires.
  const check = () => {
    if (done) return;
    readFile(file, 'utf8').then(
      (s) => {
        if (/^populated 0$/m.test(s)) fire();
      },
      () => fire(),
    );
  };
  try {
    w = watch(file, { persistent: false }, check);
  } catch {
    return undefined;
  }
  w.on('error', fire);
  // It may have emptied before the watch was in place.
  check();
  return stop;
}
