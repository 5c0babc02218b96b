import { createHash, randomBytes } from 'node:crypto';
import { chmod, readFile, rename, writeFile } from 'node:fs/promises';
import { ForkdError, type CreatedKey, type KeyInfo } from '@forkd/protocol';
import type { ControlStore, KeyRecord } from '../../store/control-store.js';
import { AuthThrottle } from './auth-throttle.js';

/** Who is calling: resolved from the API key of every request. */
export interface Principal {
  keyId: string;
  tenant: string;
  /** May manage keys and read every tenant's audit records. */
  admin: boolean;
}

export const DEFAULT_TENANT = 'default';

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** 160 random bits; `e2b_` + 40 hex digits is the shape the official e2b SDKs check for. */
function mintKey(format: 'forkd' | 'e2b'): string {
  return `${format === 'e2b' ? 'e2b_' : 'forkd_'}${randomBytes(20).toString('hex')}`;
}

/** What mintKey makes for an admin: the only shape of key ensureAdminKey adopts. */
const ADMIN_KEY_SHAPE = /^forkd_[0-9a-f]{40}$/;

export function keyInfo(k: KeyRecord): KeyInfo {
  return { id: k.id, tenant: k.tenant, prefix: k.prefix, ...(k.name ? { name: k.name } : {}), admin: k.admin, createdAt: k.createdAt, ...(k.revokedAt ? { revokedAt: k.revokedAt } : {}) };
}

/** API keys, stored only as hashes; each is bound to one tenant. */
export class ApiKeys {
  readonly #store: ControlStore;
  /** Shared by every entry (REST, WebSockets, the port proxy): one budget of failures per source. */
  readonly throttle: AuthThrottle;

  constructor(store: ControlStore, throttle = new AuthThrottle()) {
    this.#store = store;
    this.throttle = throttle;
  }

  /**
   * Resolves a presented key; unknown and revoked keys are UNAUTHENTICATED
   * alike. With a source address, its failures are counted and a source that
   * used up its budget is refused (RESOURCE_EXHAUSTED) before the key is looked at.
   */
  async authenticate(key: string | undefined, source?: string): Promise<Principal> {
    if (source !== undefined) this.throttle.check(source);
    const fail = (message: string) => {
      if (source !== undefined) this.throttle.failed(source);
      return new ForkdError('UNAUTHENTICATED', message);
    };
    if (!key) throw fail('an API key is required (Authorization: Bearer KEY or X-API-Key: KEY)');
    const k = key.length <= 200 ? await this.#store.keyByHash(hashKey(key)) : undefined;
    if (!k || k.revokedAt) throw fail('invalid or revoked API key');
    return { keyId: k.id, tenant: k.tenant, admin: k.admin };
  }

  /** Only admin keys mint keys; a key for another tenant than the caller's needs admin too. */
  async create(req: { tenant?: string | undefined; format: 'forkd' | 'e2b'; name?: string | undefined; admin: boolean }, by: Principal | undefined): Promise<CreatedKey> {
    if (by && !by.admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key can create keys');
    const key = mintKey(req.format);
    const rec: KeyRecord = {
      id: `key-${randomBytes(6).toString('hex')}`,
      tenant: req.tenant ?? by?.tenant ?? DEFAULT_TENANT,
      hash: hashKey(key),
      prefix: key.slice(0, key.indexOf('_') + 5),
      ...(req.name ? { name: req.name } : {}),
      admin: req.admin,
      createdAt: new Date().toISOString(),
    };
    await this.#store.insertKey(rec);
    return { key, info: keyInfo(rec) };
  }

  async list(by: Principal): Promise<KeyInfo[]> {
    return (await this.#store.listKeys(by.admin ? undefined : by.tenant)).map(keyInfo);
  }

  /**
   * Admins revoke any key; others only non-admin keys of their own tenant (a
   * tenant key locking out its admins would be a privilege it does not have).
   * Unknown ids, and other tenants' keys, are NOT_FOUND.
   */
  async revoke(id: string, by: Principal): Promise<void> {
    if (!by.admin) {
      const k = (await this.#store.listKeys(by.tenant)).find((r) => r.id === id && !r.revokedAt);
      if (k?.admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key can revoke an admin key');
    }
    if (!(await this.#store.revokeKey(id, new Date().toISOString(), by.admin ? undefined : by.tenant))) throw new ForkdError('NOT_FOUND', `no active key ${id}`);
  }

  /**
   * The machine's admin key, kept in a root-only file so the CLI on the same
   * host works without configuration. Made once; made again only if its file
   * is gone or the key was revoked. A well-formed key in the file that this
   * database has never seen is adopted: the operator gave every replica the
   * same one (a Kubernetes Secret), and each would otherwise mint its own.
   */
  async ensureAdminKey(file: string): Promise<string> {
    const existing = (await readFile(file, 'utf8').catch(() => '')).trim();
    if (existing) {
      const k = await this.#store.keyByHash(hashKey(existing));
      if (k && !k.revokedAt && k.admin) return existing;
      if (!k && ADMIN_KEY_SHAPE.test(existing) && (await this.#adopt(existing))) return existing;
    }
    const { key } = await this.create({ format: 'forkd', name: 'admin (forkd setup)', admin: true }, undefined);
    await writeFile(`${file}.tmp`, `${key}\n`, { mode: 0o600 });
    await chmod(`${file}.tmp`, 0o600);
    await rename(`${file}.tmp`, file);
    return key;
  }

  /** Records `key` as an admin key; true also when another replica starting at once recorded it first. */
  async #adopt(key: string): Promise<boolean> {
    const rec: KeyRecord = {
      id: `key-${randomBytes(6).toString('hex')}`,
      tenant: DEFAULT_TENANT,
      hash: hashKey(key),
      prefix: key.slice(0, key.indexOf('_') + 5),
      name: 'admin (state dir)',
      admin: true,
      createdAt: new Date().toISOString(),
    };
    await this.#store.insertKey(rec).catch(() => undefined);
    const k = await this.#store.keyByHash(rec.hash);
    return !!k && k.admin && !k.revokedAt;
  }
}


/** The query parameter a browser WebSocket, which cannot set headers, passes its key in. */
export const KEY_PARAM = 'api_key';

/**
 * A REST call carrying its key in the query string is refused even when a
 * header has one too: URLs end up in proxy and access logs, and a client that
 * does this should learn it at once, not when the key leaks.
 */
export function refuseKeyInQuery(query: URLSearchParams): void {
  if (query.has(KEY_PARAM)) throw new ForkdError('UNAUTHENTICATED', `?${KEY_PARAM}= is accepted on WebSocket upgrades only (URLs are logged); send the key in the Authorization: Bearer or X-API-Key header`);
}

/**
 * The key a request presents: `Authorization: Bearer KEY` (forkd's SDK),
 * `X-API-Key: KEY` (e2b's SDKs), or `?api_key=` for browser WebSockets, which
 * cannot set headers (pass an empty query everywhere else).
 */
export function presentedKey(header: (name: string) => string | undefined, query: URLSearchParams): string | undefined {
  const auth = header('authorization');
  const bearer = auth && /^Bearer\s+(\S+)$/i.exec(auth)?.[1];
  return bearer || header('x-api-key') || query.get(KEY_PARAM) || undefined;
}
