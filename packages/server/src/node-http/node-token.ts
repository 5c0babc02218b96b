import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Where `forkd serve --role node` keeps the secret its control plane presents, unless FORKD_NODE_TOKEN_FILE names another file. */
export function nodeTokenPath(stateDir: string): string {
  return join(stateDir, 'node.token');
}

/**
 * The node's token: made at first start (256 random bits, a root-only file
 * in the private state dir), the same on every later start so a control
 * plane configured with it keeps working across restarts. A file that is
 * already there is used as it is: nodes given one token (a Kubernetes
 * Secret) answer a control plane that discovers them with that token.
 */
export function nodeToken(file: string): Promise<string> {
  return persistentToken(file, 'fnt_');
}

/** A secret kept in a root-only file: read when there, else made (256 random bits after `prefix`) and written once. */
export async function persistentToken(path: string, prefix: string): Promise<string> {
  const existing = (await readFile(path, 'utf8').catch(() => '')).trim();
  if (existing) return existing;
  const token = `${prefix}${randomBytes(32).toString('base64url')}`;
  try {
    // `wx`: two starts racing keep whichever token was written first.
    await writeFile(path, `${token}\n`, { mode: 0o600, flag: 'wx' });
    return token;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    return (await readFile(path, 'utf8')).trim();
  }
}

/** Whether an `authorization` header carries the token (compared in constant time: digests of equal length). */
export function presentsToken(header: string | undefined, token: string): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  if (!m) return false;
  const digest = (s: string) => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(m[1]!), digest(token));
}
