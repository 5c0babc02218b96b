import { exec } from '../../shared/exec.js';
import { SERVER_VERSION } from '../../shared/version.js';
import { parseRuncVersion } from '../../setup/private-runc.js';
import { parseCriuVersion } from '../../setup/setup.js';
import { FORKD_GUEST_PROTOCOL, FORKD_GUEST_PROTOCOL_MIN } from '../guest/guest-frames.js';
import type { InstalledVersions } from './snapshot-compat.js';
import { SNAPSHOT_FORMAT } from './snapshot-stamp.js';

/** Runs a tool and gives its stdout (undefined when it cannot run): the real host, or doctor's view of one. */
export type RunTool = (path: string, args: readonly string[]) => Promise<string | undefined>;

const runHere: RunTool = (path, args) => exec(path, args, { allowFailure: true, timeoutMs: 10_000 }).then((r) => r.stdout, () => undefined);

/** The versions of what dumps and restores on this host: forkd's own, its agent's protocol, and the CRIU and runc it runs. */
export async function installedVersions(criu: string, runc: string, run: RunTool = runHere): Promise<InstalledVersions> {
  const [c, r] = await Promise.all([run(criu, ['--version']), run(runc, ['--version'])]);
  const cv = c === undefined ? null : parseCriuVersion(c);
  const rv = r === undefined ? null : parseRuncVersion(r);
  return {
    format: SNAPSHOT_FORMAT,
    forkd: SERVER_VERSION,
    guestProtocol: { min: FORKD_GUEST_PROTOCOL_MIN, max: FORKD_GUEST_PROTOCOL },
    criu: cv ? cv.join('.') : 'unknown',
    runc: rv ? `${rv.slice(0, 3).join('.')}${rv[3]}` : 'unknown',
  };
}
