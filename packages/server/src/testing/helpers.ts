import type { NodeService } from '../node-contract/node-service.js';
import type { SpawnOptions } from '../node-contract/node-types.js';

export interface RunResult {
  stdout: string;
  stderr: string;
  exitCode: number;
  signal: number;
  oomKilled: boolean;
}

/** Runs a command to completion and collects its output (a string goes through `bash -lc`); the manager and every node contract spawn alike. */
export async function run(m: Pick<NodeService, 'spawn'>, id: string, argv: string[] | string, opts: Partial<SpawnOptions> & { input?: string } = {}): Promise<RunResult> {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  const { input, ...spawn } = opts;
  const { process, exit } = await m.spawn(
    id,
    { argv: typeof argv === 'string' ? ['/bin/bash', '-lc', argv] : argv, stdin: input !== undefined, ...spawn },
    { onStdout: (d) => void out.push(d), onStderr: (d) => void err.push(d) },
  );
  if (input !== undefined) {
    await process.write(Buffer.from(input));
    process.closeStdin();
  }
  const e = await exit;
  if (!e) throw new Error('process stream ended without an exit');
  return { stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString(), ...e };
}

/** Polls `fn` until it returns a truthy value or the time is up. */
export async function waitFor<T>(fn: () => Promise<T> | T, timeoutMs = 10_000, what = 'condition'): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Whether a process of this pid exists (a sweep of a dead run's leftovers asks). */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
