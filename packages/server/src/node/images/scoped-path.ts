import { lstat, mkdir, readlink, chmod } from 'node:fs/promises';
import { join } from 'node:path';

/** Symlinks followed while resolving one path, as the kernel allows (ELOOP past it). */
const MAX_HOPS = 40;

/**
 * An archived path as its parts: leading `/` and `./` go, `.` parts go,
 * and any `..` refuses the path (undefined): a layer names paths inside
 * its root and has no reason to climb.
 */
export function layerPathParts(p: string): string[] | undefined {
  const parts = p.split('/').filter((s) => s !== '' && s !== '.');
  return parts.some((s) => s === '..') ? undefined : parts;
}

export class ScopeError extends Error {}

/**
 * The host path of directory `parts` under `root`, with every symlink on the
 * way resolved as if `root` were `/` (absolute targets start at `root`, `..`
 * stops there), as Docker's FollowSymlinkInScope does: a layer whose
 * `/etc` links to a host path still writes inside `root`. With `create`,
 * missing directories are made (root's, 0755). Safe without openat2 because
 * nothing else writes to the tree meanwhile (a private, unmounted volume).
 */
export async function resolveDirInScope(root: string, parts: readonly string[], create: boolean): Promise<string> {
  const cur: string[] = [];
  const queue = [...parts];
  let hops = 0;
  while (queue.length > 0) {
    const s = queue.shift()!;
    if (s === '' || s === '.') continue;
    if (s === '..') {
      cur.pop();
      continue;
    }
    const p = join(root, ...cur, s);
    const st = await lstat(p).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return undefined;
      throw e;
    });
    if (!st) {
      if (!create) throw new ScopeError(`/${[...cur, s].join('/')} does not exist`);
      await mkdir(p);
      await chmod(p, 0o755);
      cur.push(s);
      continue;
    }
    if (st.isSymbolicLink()) {
      if (++hops > MAX_HOPS) throw new ScopeError(`too many symlinks at /${[...cur, s].join('/')}`);
      const target = await readlink(p);
      if (target.startsWith('/')) cur.length = 0;
      queue.unshift(...target.split('/'));
      continue;
    }
    if (!st.isDirectory()) throw new ScopeError(`/${[...cur, s].join('/')} is not a directory`);
    cur.push(s);
  }
  return join(root, ...cur);
}

/** Whether `path` names a file under `root` (symlinks followed in scope, the last one too), e.g. /bin/sh in an image. */
export function existsInScope(root: string, path: string): Promise<boolean> {
  return fileInScope(root, path, 0).catch(() => false);
}

async function fileInScope(root: string, path: string, depth: number): Promise<boolean> {
  if (depth > MAX_HOPS) return false;
  const parts = path.split('/').filter((s) => s !== '' && s !== '.');
  const dir = await resolveDirInScope(root, parts.slice(0, -1), false);
  const name = parts.at(-1);
  if (!name || name === '..') return false;
  const st = await lstat(join(dir, name));
  if (!st.isSymbolicLink()) return st.isFile();
  const target = await readlink(join(dir, name));
  return fileInScope(root, target.startsWith('/') ? target : `${dir.slice(root.length)}/${target}`, depth + 1);
}
