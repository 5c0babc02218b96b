import { existsSync } from 'node:fs';
import { copyFile, rename, rm } from 'node:fs/promises';
import { ownTmp } from '../shared/own-tmp.js';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import type { ForkdConfig } from '../shared/config.js';
import { exec } from '../shared/exec.js';

/** The runc forkd runs: the private root's, made runnable from the host (see ensureRunc). */
export function runcPath(config: ForkdConfig): string {
  return join(config.cacheDir, 'bin', 'runc');
}

type Version = [number, number, number, string];

export function parseRuncVersion(text: string): Version | null {
  const m = /runc version (\d+)\.(\d+)\.(\d+)(-rc\.?\d+)?/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3]), m[4] ?? ''] : null;
}

/**
 * runc versions open to the masked-path and /dev/null races of 2025
 * (CVE-2025-31133, CVE-2025-52565, CVE-2025-52881): everything before 1.2.8,
 * 1.3.0 to 1.3.2 and the 1.4.0 release candidates before rc.3. User
 * namespaces also need ≥ 1.2 (1.1 restores them, but forkd only trusts fixed
 * versions).
 */
export function runcRefusal(v: Version | null): string | undefined {
  if (!v) return 'its version could not be read';
  const [major, minor, patch, rc] = v;
  const name = `${major}.${minor}.${patch}${rc}`;
  const fixed = major > 1 || (minor === 2 && patch >= 8) || (minor === 3 && patch >= 3) || (minor === 4 && (!rc || Number(rc.replace(/\D/g, '')) >= 3)) || minor > 4;
  return fixed ? undefined : `runc ${name} is open to CVE-2025-31133, CVE-2025-52565 and CVE-2025-52881 (fixed in 1.2.8, 1.3.3 and 1.4.0-rc.3)`;
}

/**
 * runc ≥ 1.3 from the private Debian root that also holds CRIU (the host's
 * Debian 12 has 1.1.5, open to the 2025 CVEs, and a newer Debian runc needs a
 * newer libc). Running it through the root's loader, as the criu wrapper
 * does, would not work: runc re-executes /proc/self/exe for `runc init`,
 * which would be the loader. So a copy of the binary gets the root's loader
 * as its interpreter and the root's libraries as its search path
 * (patchelf): the host's libc is never touched.
 */
export async function ensureRunc(config: ForkdConfig, root: string, detail: (d: string) => void): Promise<string> {
  const bin = join(root, 'usr/sbin/runc');
  if (!existsSync(bin)) {
    detail('runc from the private Debian root');
    // 022: files of a Debian root must be readable by what runs from it.
    await exec('chroot', [root, 'apt-get', 'install', '-y', '--no-install-recommends', 'runc'], { timeoutMs: 600_000, umask: 0o022, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
    await exec('chroot', [root, 'apt-get', 'clean']);
  }
  const out = runcPath(config);
  const tmp = ownTmp(out);
  await copyFile(bin, tmp);
  const lib = `${root}/lib/x86_64-linux-gnu:${root}/usr/lib/x86_64-linux-gnu`;
  await exec('patchelf', ['--set-interpreter', join(root, 'lib64/ld-linux-x86-64.so.2'), '--set-rpath', lib, tmp]);
  const version = parseRuncVersion((await exec(tmp, ['--version'], { allowFailure: true })).stdout);
  const refusal = runcRefusal(version);
  if (refusal) {
    await rm(tmp, { force: true });
    throw new ForkdError('FAILED_PRECONDITION', `refusing runc: ${refusal}`);
  }
  await rename(tmp, out);
  return `runc ${version!.slice(0, 3).join('.')}${version![3]}`;
}
