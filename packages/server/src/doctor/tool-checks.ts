import { parseRuncVersion, runcPath, runcRefusal } from '../setup/private-runc.js';
import { atLeast, criuPath, CRIU_MIN, parseCriuVersion } from '../setup/setup.js';
import { finding, type HostCheck } from './host-check.js';
import type { ToolOutput } from './host-view.js';

function absent(check: string, path: string, out: Exclude<ToolOutput, { kind: 'ran' }>, blocks: string) {
  if (out.kind === 'denied') return finding(check, 'skip', `${path} is not readable by this user`, 'run forkd doctor as root');
  return finding(check, 'error', `${path} is missing: ${blocks}`, 'run forkd setup');
}

/** The CRIU forkd runs (setup's wrapper around its private root's), at the version setup insists on. */
export const criuCheck: HostCheck = async ({ host, config }) => {
  const path = criuPath(config);
  const out = await host.run(path, ['--version']);
  if (out.kind !== 'ran') return absent('criu', path, out, 'no snapshots, pauses with memory, forks or rewinds');
  const v = parseCriuVersion(out.stdout);
  if (!atLeast(v, CRIU_MIN)) return finding('criu', 'error', `CRIU ${v?.join('.') ?? '(version unreadable)'} is older than ${CRIU_MIN.join('.')}: snapshots with memory fail on current kernels`, 'run forkd setup (it installs CRIU 4.2 in a private root)');
  return finding('criu', 'ok', `CRIU ${v!.join('.')}`);
};

/** forkd's runc, judged by the same refusal setup applies (the 2025 CVEs). */
export const runcCheck: HostCheck = async ({ host, config }) => {
  const path = runcPath(config);
  const out = await host.run(path, ['--version']);
  if (out.kind !== 'ran') return absent('runc', path, out, 'no sandbox can start');
  const v = parseRuncVersion(out.stdout);
  const refusal = runcRefusal(v);
  if (refusal) return finding('runc', 'error', `refused: ${refusal}`, 'run forkd setup (it installs a fixed runc in a private root)');
  return finding('runc', 'ok', `runc ${v!.slice(0, 3).join('.')}${v![3]}`);
};
