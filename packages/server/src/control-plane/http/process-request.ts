import { constants as osConstants } from 'node:os';
import { ForkdError, type SpawnRequest } from '@forkd/protocol';
import type { SpawnOptions } from '../../node-contract/index.js';

/** argv of a spawn request: `cmd` as given, or `command` through a login bash. */
export function spawnOptions(r: SpawnRequest): SpawnOptions {
  return {
    argv: r.cmd ?? ['/bin/bash', '-lc', r.command!],
    env: r.env,
    cwd: r.cwd,
    user: r.user,
    tag: r.tag,
    stdin: r.stdin,
    pty: r.pty ? { cols: r.cols ?? 80, rows: r.rows ?? 24 } : undefined,
  };
}

export function signalNumber(s: number | string): number {
  if (typeof s === 'number') return s;
  const n = (osConstants.signals as Record<string, number>)[s];
  if (!n) throw new ForkdError('INVALID_ARGUMENT', `unknown signal ${s}`);
  return n;
}
