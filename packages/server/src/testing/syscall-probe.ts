import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../shared/config.js';
import { exec } from '../shared/exec.js';
import type { SandboxManager } from '../node/manager/sandbox-manager.js';
import { run } from './helpers.js';

/** Where the probe lives inside a sandbox once installed. */
export const PROBE_PATH = '/usr/local/bin/forkd-probe';

/**
 * Compiles `syscall-probe.c` static into `dir` and returns the binary: the
 * attacks are made by raw syscalls with exact arguments, which neither a
 * shell nor Python's ctypes can do for clone without a child running on.
 */
export async function buildSyscallProbe(dir: string): Promise<Buffer> {
  const out = join(dir, 'syscall-probe');
  await exec('gcc', ['-static', '-O1', '-Wall', '-Werror', '-o', out, join(REPO_ROOT, 'packages/server/src/testing/syscall-probe.c'), '-lpthread']);
  return readFile(out);
}

export async function installSyscallProbe(m: SandboxManager, id: string, binary: Buffer): Promise<void> {
  await (await m.guest(id)).writeFile(PROBE_PATH, binary, { mode: 0o755 });
}

/**
 * Runs one probe in the sandbox: "ok", "ok:DATA", an errno name, or
 * "signal:N" when the kernel killed it (SIGSYS is 31).
 */
export async function probe(m: SandboxManager, id: string, ...args: string[]): Promise<string> {
  const r = await run(m, id, [PROBE_PATH, ...args]);
  if (r.signal) return `signal:${r.signal}`;
  if (r.exitCode !== 0) throw new Error(`probe ${args.join(' ')} exited ${r.exitCode}: ${r.stderr}`);
  return r.stdout.trim();
}
