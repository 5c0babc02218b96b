import { existsSync, watch, type FSWatcher } from 'node:fs';
import { basename, dirname } from 'node:path';

/**
 * Resolves true once `path` exists, or false after `timeoutMs` (or when
 * `abort` settles first). Blocks on inotify (a watch of its directory), so
 * a socket or file another process makes is seen the moment it appears,
 * with no timer ticking meanwhile.
 */
export function waitForPath(path: string, timeoutMs: number, abort?: Promise<unknown>): Promise<boolean> {
  return new Promise((resolve) => {
    const name = basename(path);
    let watcher: FSWatcher | undefined;
    let done = false;
    const finish = (found: boolean) => {
      if (done) return;
      done = true;
      watcher?.close();
      clearTimeout(timer);
      resolve(found);
    };
    const timer = setTimeout(() => finish(existsSync(path)), timeoutMs);
    try {
      watcher = watch(dirname(path), { persistent: false }, (_event, file) => {
        if ((file === null || file === name) && existsSync(path)) finish(true);
      });
      watcher.on('error', () => finish(existsSync(path)));
    } catch {
      // No directory to watch: the path cannot appear either.
      finish(false);
      return;
    }
    void abort?.then(
      () => finish(existsSync(path)),
      () => finish(existsSync(path)),
    );
    // Checked after the watch is set, so a path made in between is not missed.
    if (existsSync(path)) finish(true);
  });
}
