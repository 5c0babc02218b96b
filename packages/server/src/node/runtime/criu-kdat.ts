import { copyFile, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { exec } from '../../shared/exec.js';
import { ownTmp } from '../../shared/own-tmp.js';

/** Where CRIU looks for its cached kernel probe (compiled into Debian's build). */
const KDAT = '/run/criu.kdat';

/**
 * Every CRIU run first probes the kernel (~15-50 ms) unless it finds
 * /run/criu.kdat; it only writes that cache when /run is a tmpfs, which it is
 * not on every host. So forkd probes once, in a private mount namespace with a
 * tmpfs on /run, and installs the result. Redone at every start so a new
 * kernel is never described by an old probe; a failure only costs speed.
 */
export async function refreshCriuKdat(criu: string, cacheDir: string): Promise<boolean> {
  // Names of this start's own: daemons starting together on one host (a fleet's nodes) each probe.
  const probe = ownTmp(join(cacheDir, 'criu.kdat'));
  const script = 'mount -t tmpfs forkd-kdat /run && "$0" check >/dev/null 2>&1; cp /run/criu.kdat "$1"';
  const r = await exec('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', script, criu, probe], { allowFailure: true }).catch(() => undefined);
  try {
    if (r?.code !== 0) return false;
    const tmp = ownTmp(KDAT);
    await copyFile(probe, tmp);
    await rename(tmp, KDAT);
    return true;
  } finally {
    await rm(probe, { force: true });
  }
}
