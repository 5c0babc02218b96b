import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Per-sandbox envd access tokens, derived (HMAC-SHA256 of the sandbox id
 * under a server secret): each sandbox gets a distinct token, the same one
 * again on every connect and after a pause, and nothing of it is stored in
 * plain text. The secret is derived from the control plane's secrets.key,
 * which every replica shares, so any replica checks a token another one
 * gave out; a state dir that already holds its own `e2b-token.secret`
 * (made before) keeps it, so tokens handed out then stay valid.
 */
export class AccessTokens {
  readonly #secret: Buffer;

  constructor(secret: Buffer) {
    this.#secret = secret;
  }

  static async open(stateDir: string, secretKey?: Buffer): Promise<AccessTokens> {
    const file = join(stateDir, 'e2b-token.secret');
    const existing = await readFile(file).catch(() => undefined);
    if (existing && existing.length >= 32) return new AccessTokens(existing);
    if (secretKey) return new AccessTokens(Buffer.from(hkdfSync('sha256', secretKey, Buffer.alloc(0), 'forkd e2b access tokens', 32)));
    const secret = randomBytes(32);
    await writeFile(`${file}.tmp`, secret, { mode: 0o600 });
    await chmod(`${file}.tmp`, 0o600);
    await rename(`${file}.tmp`, file);
    return new AccessTokens(secret);
  }

  /** 32 hex digits, like the reference's tokens in length. */
  token(sandboxId: string): string {
    return createHmac('sha256', this.#secret).update(`envd-access-token:${sandboxId}`).digest('hex').slice(0, 32);
  }

  matches(sandboxId: string, presented: string | undefined): boolean {
    return presented !== undefined && sameSecret(presented, this.token(sandboxId));
  }

  /**
   * The sandbox's traffic token (E2B's `trafficAccessToken`): it opens the
   * sandbox's ports through the port proxy and nothing else (not envd).
   */
  trafficToken(sandboxId: string): string {
    return createHmac('sha256', this.#secret).update(`traffic-access-token:${sandboxId}`).digest('hex').slice(0, 32);
  }

  matchesTraffic(sandboxId: string, presented: string | undefined): boolean {
    return presented !== undefined && sameSecret(presented, this.trafficToken(sandboxId));
  }

  /**
   * The token of a template file upload URL (E2B's builder hands the SDK a
   * URL it PUTs to without its API key): one tenant's upload of one files
   * hash, until `expires` (seconds since the epoch).
   */
  uploadToken(tenant: string, hash: string, expires: number): string {
    return createHmac('sha256', this.#secret).update(`template-upload:${tenant}:${hash}:${expires}`).digest('hex');
  }

  matchesUpload(tenant: string, hash: string, expires: number, presented: string | undefined, nowSeconds = Math.floor(Date.now() / 1000)): boolean {
    return presented !== undefined && Number.isSafeInteger(expires) && expires >= nowSeconds && sameSecret(presented, this.uploadToken(tenant, hash, expires));
  }
}

/** Equality of two secrets in constant time (of their digests: equal lengths whatever was presented). */
function sameSecret(a: string, b: string): boolean {
  const d = (x: string) => createHash('sha256').update(x).digest();
  return timingSafeEqual(d(a), d(b));
}

/**
 * A presigned URL's signature (reference envd, and the SDK that makes them):
 * `v1_` + base64(sha256("path:op:user:token[:expiration]")) without padding.
 * `path` is exactly what the caller passed, not the resolved path.
 */
export function fileSignature(path: string, op: 'read' | 'write', user: string, token: string, expiration?: string | undefined): string {
  const raw = `${path}:${op}:${user}:${token}${expiration !== undefined ? `:${expiration}` : ''}`;
  return `v1_${createHash('sha256').update(raw).digest('base64').replace(/=+$/, '')}`;
}

export interface SignedQuery {
  path: string;
  username: string | undefined;
  signature: string | undefined;
  expiration: string | undefined;
}

/** Why a /files request is refused, in the reference's order and words; undefined: allowed. */
export function signingRefusal(q: SignedQuery, op: 'read' | 'write', token: string, headerToken: string | undefined, nowSeconds = Math.floor(Date.now() / 1000)): string | undefined {
  if (headerToken !== undefined) return sameSecret(headerToken, token) ? undefined : 'access token present in header but does not match';
  if (q.signature === undefined) return 'missing signature query parameter';
  if (!sameSecret(q.signature, fileSignature(q.path, op, q.username ?? '', token, q.expiration))) return 'invalid signature';
  if (q.expiration !== undefined && Number(q.expiration) < nowSeconds) return 'signature is already expired';
  return undefined;
}
