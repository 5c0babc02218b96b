import { exec, type ExecResult } from '../shared/exec.js';

/** `nobody`: an unprivileged host user with no group that could matter. */
export const OTHER_UID = 65534;

/**
 * Runs argv as another (unprivileged) host user: setpriv from util-linux,
 * with every supplementary group dropped, so only "other" permission bits
 * apply to it. setpriv keeps root's capabilities (PR_SET_KEEPCAPS) up to its
 * own execve, whose path lookup would then pass any directory: `env` is
 * exec'd first (a path everyone may run) and execs argv with none left.
 */
export function asOtherUser(argv: readonly string[]): Promise<ExecResult> {
  return exec('setpriv', [`--reuid=${OTHER_UID}`, `--regid=${OTHER_UID}`, '--clear-groups', '--', '/usr/bin/env', ...argv], { allowFailure: true });
}

/** The attempt failed for lack of permission (not because the path is missing or the harness broke). */
export function deniedMessage(r: ExecResult): boolean {
  return r.code !== 0 && /Permission denied|Operation not permitted/.test(r.stderr);
}
