import { UsageError } from './usage-error.js';

export type CopyEndpoint = { kind: 'remote'; id: string; path: string } | { kind: 'local'; path: string };

/**
 * `ID:/path` names a file in a sandbox; anything else is local (`-` is
 * stdin/stdout). A colon after a slash (`./a:b`, `/x/y:z`) stays local, so
 * local paths with colons are reachable by writing them with `./`.
 */
export function parseCopyEndpoint(arg: string): CopyEndpoint {
  const m = /^([A-Za-z0-9][A-Za-z0-9_.-]*):(.*)$/.exec(arg);
  if (!m) return { kind: 'local', path: arg };
  const path = m[2]!;
  if (!path.startsWith('/')) throw new UsageError(`${JSON.stringify(arg)}: the path in a sandbox must be absolute (ID:/path)`);
  return { kind: 'remote', id: m[1]!, path };
}
