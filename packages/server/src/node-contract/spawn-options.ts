import type { SpawnRequest } from '@forkd/protocol';
import type { SpawnOptions } from './node-types.js';

/** A spawn request of the API as the node contract takes it: `cmd` as given, or `command` through a login bash. */
export function spawnOptions(r: SpawnRequest): SpawnOptions {
  return {
    argv: r.cmd ?? ['/bin/bash', '-lc', r.command ?? ''],
    env: r.env,
    cwd: r.cwd,
    user: r.user,
    tag: r.tag,
    stdin: r.stdin,
    pty: r.pty ? { cols: r.cols ?? 80, rows: r.rows ?? 24 } : undefined,
  };
}
