import { posix } from 'node:path';

/**
 * A sandbox path as the policy compares it: absolute, `.` and `..` and
 * repeated slashes resolved lexically (a relative path is taken from `/`,
 * the guest agent's working directory). Symlinks are not followed: the
 * control plane does not see the sandbox's filesystem (see docs/SECURITY.md).
 */
export function normalPath(p: string): string {
  const n = posix.resolve('/', p);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

/** `path` is `prefix` or inside it (`/etc` covers `/etc/passwd`, not `/etcetera`). */
export function underPrefix(path: string, prefix: string): boolean {
  const p = normalPath(path);
  const x = normalPath(prefix);
  return x === '/' || p === x || p.startsWith(`${x}/`);
}

/** `path` is an ancestor of `prefix` (a listing of it may contain the prefix). */
export function aboveOrAt(path: string, prefix: string): boolean {
  return underPrefix(prefix, path);
}
