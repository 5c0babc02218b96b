import type { SpawnRequest } from '@forkd/protocol';
import type { Command, SpawnOptions } from './types.js';

export interface SpawnExtras {
  pty?: boolean | undefined;
  cols?: number | undefined;
  rows?: number | undefined;
  stdin?: boolean | undefined;
}

/**
 * The wire form of a process to start. Fields are picked explicitly and
 * undefined ones left out: the server's schemas are strict, and callers pass
 * option bags that carry more than spawn fields.
 */
export function spawnRequest(cmd: Command, opts: SpawnOptions, extras: SpawnExtras = {}): SpawnRequest {
  const req: Record<string, unknown> = typeof cmd === 'string' ? { command: cmd } : { cmd: [...cmd] };
  const fields = { env: opts.env, cwd: opts.cwd, user: opts.user, tag: opts.tag, ...extras };
  for (const [k, v] of Object.entries(fields)) if (v !== undefined) req[k] = v;
  return req as SpawnRequest;
}
