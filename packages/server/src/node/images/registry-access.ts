import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ImageRef, RegistryAuth } from '@forkd/protocol';
import type { RegistryAccess } from '../../shared/registry-config.js';

export type { RegistryAccess };

/**
 * skopeo's options for reading `ref` (`inspect` takes them unprefixed,
 * `copy` as --src-*). Credentials never go on a command line (other host
 * users read /proc/PID/cmdline): a request's own are written to an auth file
 * in `privateDir` (0700, removed with it after the pull). Without either,
 * an empty auth file: skopeo must not fall back to root's own
 * (~/.docker/config.json), which a tenant's pull would then use.
 */
export async function skopeoAccessArgs(ref: ImageRef, access: RegistryAccess, privateDir: string, auth: RegistryAuth | undefined, prefix: '' | 'src-'): Promise<string[]> {
  if (ref.kind !== 'registry') return [];
  let authFile = access.authFile;
  if (auth || !authFile) {
    authFile = join(privateDir, 'auth.json');
    const auths = auth ? { [ref.registry]: { auth: Buffer.from(`${auth.username}:${auth.password}`).toString('base64') } } : {};
    await writeFile(authFile, JSON.stringify({ auths }), { mode: 0o600 });
  }
  return [`--${prefix}authfile`, authFile, ...(access.insecure.includes(ref.registry) ? [`--${prefix}tls-verify=false`] : [])];
}

/** The environment skopeo runs with: no home or runtime dir of root's to find credentials or policies in. */
export function skopeoEnv(privateDir: string): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', HOME: privateDir, TMPDIR: privateDir };
}
