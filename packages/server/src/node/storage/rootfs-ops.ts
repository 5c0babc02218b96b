import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { REPO_ROOT } from '../../shared/config.js';
import { exec } from '../../shared/exec.js';

/**
 * Host-side file operations inside a sandbox's root. A root is shaped by
 * whoever built its template and by the sandbox itself: any path in it may
 * be a symlink to a host path, and may become one between a check and a
 * use. So forkd never touches such a path with Node's fs (no openat2, and
 * an lstat check before a path-based call is a race): `forkd-rootfs-ops`
 * (packages/host-tools) resolves every path with openat2 inside the root,
 * refusing symlinks and mount crossings, and acts through descriptors.
 * Everything else forkd needs inside a root happens through the guest agent
 * (files API), inside the sandbox's own mount namespace.
 */
export const ROOTFS_OPS_TOOL = join(REPO_ROOT, 'packages/host-tools/build/forkd-rootfs-ops');

export type RootfsOp =
  | ['mkdir', string, number]
  | ['chmod', string, number]
  | ['install', string, string, number]
  | ['rmtree', string]
  | ['mountpoint', string, 'dir' | 'file']
  | ['symlink', string, string]
  | ['unseal', string]
  | ['seal-agent', string, string, number]
  | ['check-agent', string, string]
  | ['du', string];

const EXIT_REFUSED = 3;
const EXIT_MISSING = 4;

/** Runs ops in order in one process (the first failure stops the rest); resolves with the tool's stdout. */
export async function rootfsOps(root: string, ops: readonly RootfsOp[], tool = ROOTFS_OPS_TOOL): Promise<string> {
  const args = [root, ...ops.flatMap(encode)];
  const r = await exec(tool, args, { allowFailure: true });
  if (r.code === 0) return r.stdout;
  const why = r.stderr.trim().split('\n').pop() ?? '';
  const details = { cmd: [tool, ...args].join(' '), exitCode: r.code, stderrTail: r.stderr.slice(-4000) };
  if (r.code === EXIT_REFUSED) throw new ForkdError('FAILED_PRECONDITION', 'the sandbox root was tampered with (a symlink or a replaced entry where forkd needs its own); it is left untouched', details);
  if (r.code === EXIT_MISSING) throw new ForkdError('UNAVAILABLE', `not found in the sandbox root: ${why}`, details);
  throw new ForkdError('INTERNAL', `forkd-rootfs-ops failed (exit ${r.code}): ${why}`, details);
}

/** argv of one op: modes in octal, the wait in ms. */
function encode(op: RootfsOp): string[] {
  switch (op[0]) {
    case 'mkdir':
    case 'chmod':
      return [op[0], op[1], op[2].toString(8)];
    case 'install':
      return [op[0], op[1], op[2], op[3].toString(8)];
    case 'seal-agent':
      return [op[0], op[1], op[2], String(Math.max(0, Math.round(op[3])))];
    default:
      return [...op];
  }
}

/** Bytes of a root's data extents, and of those the ones no other volume shares (as `btrfs filesystem du -s`, walked by descriptors). */
export async function rootDiskUsage(root: string): Promise<{ totalBytes: number; exclusiveBytes: number }> {
  const out = await rootfsOps(root, [['du', '.']]);
  const j = JSON.parse(out) as { totalBytes?: unknown; exclusiveBytes?: unknown };
  if (typeof j.totalBytes !== 'number' || typeof j.exclusiveBytes !== 'number') throw new ForkdError('INTERNAL', `unexpected forkd-rootfs-ops du output: ${out.slice(0, 200)}`);
  return { totalBytes: j.totalBytes, exclusiveBytes: j.exclusiveBytes };
}
