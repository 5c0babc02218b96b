import { posix } from 'node:path';
import { RpcError } from './e2b-errors.js';

/** E2B's default user and its working directory (the `base` template has both). */
export const DEFAULT_USER = 'user';

export function homeOf(user: string): string {
  return user === 'root' ? '/root' : `/home/${user}`;
}

/**
 * envd's path rules: empty → the home (the default workdir), `~` and `~/x`
 * → the user's home, relative → against the home, absolute as given;
 * always normalised. `~otheruser` is refused.
 */
export function resolvePath(p: string | undefined, user: string): string {
  const home = homeOf(user);
  if (!p) return home;
  if (p.includes('\0')) throw new RpcError('invalid_argument', 'path must not contain NUL bytes');
  if (p === '~') return home;
  if (p.startsWith('~/')) return posix.join(home, p.slice(2));
  if (p.startsWith('~')) throw new RpcError('invalid_argument', `path ${p}: only the request user's home (~) is supported`);
  return p.startsWith('/') ? posix.normalize(p) : posix.join(home, p);
}

const USER_NAME = /^[a-z_][a-z0-9_-]{0,31}$/;

/** The request user: `Authorization: Basic base64("<user>:")`, else the default. */
export function requestUser(authorization: string | undefined): string {
  const m = authorization && /^Basic\s+(\S+)$/i.exec(authorization)?.[1];
  if (!m) return DEFAULT_USER;
  const name = Buffer.from(m, 'base64').toString('utf8').split(':')[0] ?? '';
  if (!USER_NAME.test(name)) throw new RpcError('unauthenticated', `invalid username '${name}'`);
  return name;
}

export function checkUser(name: string | undefined): string {
  if (name === undefined || name === '') return DEFAULT_USER;
  if (!USER_NAME.test(name)) throw new RpcError('unauthenticated', `invalid username '${name}'`);
  return name;
}
