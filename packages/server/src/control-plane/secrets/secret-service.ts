import { randomBytes } from 'node:crypto';
import { ForkdError, toForkdError, type ValidGrantRequest, type GrantInfo, type GrantSpec, type NodeCredential, type SecretInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { ControlStore } from '../../store/control-store.js';
import type { GrantRecord } from '../../store/secret-records.js';
import { grantCredential, grantExpired } from './grant-credential.js';
import type { SecretCipher } from './secret-cipher.js';

const aad = (tenant: string, name: string) => `forkd-secret\0${tenant}\0${name}`;
const newGrantId = () => `grt-${randomBytes(8).toString('hex')}`;

export function grantInfo(g: GrantRecord, perCall = false): GrantInfo {
  return {
    id: g.id,
    sandboxId: g.sandboxId,
    secret: g.secret,
    hosts: g.hosts,
    ...(g.methods ? { methods: g.methods } : {}),
    ...(g.paths ? { paths: g.paths } : {}),
    header: g.header,
    createdAt: g.createdAt,
    ...(g.expiresAt ? { expiresAt: g.expiresAt } : {}),
    ...(perCall ? { perCall } : {}),
  };
}

/**
 * Secrets and grants, tenant-scoped (callers check the sandbox is the
 * tenant's first). The control plane is the one place a value is opened:
 * it resolves a sandbox's grants to headers and replaces the node's set
 * (NodeService.setCredentials) after every change, so a revocation applies
 * to the next request. Expired grants are dropped when next read; the node
 * refuses them at use time whatever the control plane does.
 */
export class SecretService {
  readonly #store: ControlStore;
  readonly #cipher: SecretCipher;
  readonly #node: NodeService;
  readonly #logger: Logger | undefined;
  /** Per-call grants: in memory only, for the life of one exec call. */
  readonly #perCall = new Map<string, Map<string, GrantRecord>>();
  /** One push at a time per sandbox, in call order: an older set never lands after a newer one. */
  readonly #pushing = new Map<string, Promise<void>>();

  constructor(store: ControlStore, cipher: SecretCipher, node: NodeService, logger?: Logger) {
    this.#store = store;
    this.#cipher = cipher;
    this.#node = node;
    this.#logger = logger;
  }

  async setSecret(tenant: string, name: string, value: string): Promise<SecretInfo> {
    await this.#store.putSecret(tenant, name, this.#cipher.seal(value, aad(tenant, name)), new Date().toISOString());
    // A rotated value reaches the sandboxes that use it now, not at their next change.
    for (const id of await this.#sandboxesUsing(tenant, name)) await this.push(id);
    const rec = (await this.#store.listSecrets(tenant)).find((s) => s.name === name);
    if (!rec) throw new ForkdError('INTERNAL', `secret ${name} vanished while being set`);
    return { name: rec.name, createdAt: rec.createdAt, updatedAt: rec.updatedAt };
  }

  async listSecrets(tenant: string): Promise<SecretInfo[]> {
    return (await this.#store.listSecrets(tenant)).map((s) => ({ name: s.name, createdAt: s.createdAt, updatedAt: s.updatedAt }));
  }

  /** Removes the secret and every grant of it (stored or per-call), at once on the nodes. */
  async removeSecret(tenant: string, name: string): Promise<void> {
    if (!(await this.#store.deleteSecret(tenant, name))) throw new ForkdError('NOT_FOUND', `secret ${name} not found`);
    const affected = await this.#sandboxesUsing(tenant, name);
    for (const g of await this.#store.grants()) if (g.tenant === tenant && g.secret === name) await this.#store.deleteGrant(g.id);
    for (const calls of this.#perCall.values()) for (const [id, g] of calls) if (g.tenant === tenant && g.secret === name) calls.delete(id);
    for (const id of affected) await this.push(id);
  }

  async createGrant(tenant: string, sandboxId: string, req: ValidGrantRequest): Promise<GrantInfo> {
    if (!(await this.#store.secret(tenant, req.secret))) throw new ForkdError('NOT_FOUND', `secret ${req.secret} not found`);
    const now = Date.now();
    const g: GrantRecord = {
      id: newGrantId(),
      tenant,
      sandboxId,
      secret: req.secret,
      hosts: req.hosts,
      ...(req.methods ? { methods: req.methods } : {}),
      ...(req.paths ? { paths: req.paths } : {}),
      header: req.header,
      createdAt: new Date(now).toISOString(),
      ...(req.ttlSeconds ? { expiresAt: new Date(now + req.ttlSeconds * 1000).toISOString() } : {}),
    };
    await this.#store.insertGrant(g);
    try {
      await this.push(sandboxId);
    } catch (err) {
      // All or nothing: a grant the node could not take is not kept either.
      await this.#store.deleteGrant(g.id);
      await this.push(sandboxId).catch(() => undefined);
      throw err;
    }
    return grantInfo(g);
  }

  /** The sandbox's live grants (expired ones are deleted here), per-call ones included. */
  async listGrants(sandboxId: string): Promise<GrantInfo[]> {
    const stored = await this.#live(sandboxId);
    return [...stored.map((g) => grantInfo(g)), ...[...(this.#perCall.get(sandboxId)?.values() ?? [])].map((g) => grantInfo(g, true))];
  }

  /** The sandbox was deleted: its grants go (the node forgot its credentials with it). */
  async forgetSandbox(sandboxId: string): Promise<void> {
    for (const g of await this.#store.grants(sandboxId)) await this.#store.deleteGrant(g.id);
    this.#perCall.delete(sandboxId);
  }

  async removeGrant(sandboxId: string, grantId: string): Promise<void> {
    const g = (await this.#store.grants(sandboxId)).find((x) => x.id === grantId);
    if (!g || !(await this.#store.deleteGrant(grantId))) throw new ForkdError('NOT_FOUND', `grant ${grantId} not found`);
    await this.push(sandboxId);
  }

  /**
   * Per-call grants for one exec call: in force from this return until the
   * returned release is called (when the call ends, however it ends).
   */
  async callGrants(tenant: string, sandboxId: string, specs: readonly GrantSpec[]): Promise<() => Promise<void>> {
    if (specs.length === 0) return async () => {};
    for (const s of specs) if (!(await this.#store.secret(tenant, s.secret))) throw new ForkdError('NOT_FOUND', `secret ${s.secret} not found`);
    const at = new Date().toISOString();
    const records = specs.map((s): GrantRecord => ({ id: newGrantId(), tenant, sandboxId, secret: s.secret, hosts: s.hosts, ...(s.methods ? { methods: s.methods } : {}), ...(s.paths ? { paths: s.paths } : {}), header: s.header, createdAt: at }));
    const calls = this.#perCall.get(sandboxId) ?? new Map<string, GrantRecord>();
    this.#perCall.set(sandboxId, calls);
    for (const g of records) calls.set(g.id, g);
    const release = async () => {
      for (const g of records) calls.delete(g.id);
      if (calls.size === 0 && this.#perCall.get(sandboxId) === calls) this.#perCall.delete(sandboxId);
      await this.push(sandboxId);
    };
    try {
      await this.push(sandboxId);
    } catch (err) {
      await release().catch(() => undefined);
      throw err;
    }
    return release;
  }

  /** Replaces the node's credentials of one sandbox with what its grants resolve to now. */
  push(sandboxId: string): Promise<void> {
    const prev = this.#pushing.get(sandboxId) ?? Promise.resolve();
    const next = prev.catch(() => undefined).then(() => this.#pushNow(sandboxId));
    this.#pushing.set(sandboxId, next);
    void next.finally(() => {
      if (this.#pushing.get(sandboxId) === next) this.#pushing.delete(sandboxId);
    }).catch(() => undefined);
    return next;
  }

  /**
   * At start: nodes keep credentials in memory only, so every sandbox with
   * grants gets them again. Grants of sandboxes that no longer exist go.
   */
  async pushAll(): Promise<void> {
    const ids = new Set((await this.#store.grants()).map((g) => g.sandboxId));
    for (const id of ids) {
      try {
        await this.push(id);
      } catch (err) {
        if (toForkdError(err).code === 'NOT_FOUND') {
          for (const g of await this.#store.grants(id)) await this.#store.deleteGrant(g.id);
        } else this.#logger?.warn('grants not pushed to the node', { sandboxId: id, error: toForkdError(err).message });
      }
    }
  }

  async #pushNow(sandboxId: string): Promise<void> {
    const grants = [...(await this.#live(sandboxId)), ...(this.#perCall.get(sandboxId)?.values() ?? [])];
    const creds: NodeCredential[] = [];
    for (const g of grants) {
      const rec = await this.#store.secret(g.tenant, g.secret);
      if (!rec) continue;
      creds.push(grantCredential(g, this.#cipher.open(rec.sealed, aad(g.tenant, g.secret))));
    }
    await this.#node.setCredentials(sandboxId, creds);
  }

  async #live(sandboxId: string): Promise<GrantRecord[]> {
    const now = Date.now();
    const out: GrantRecord[] = [];
    for (const g of await this.#store.grants(sandboxId)) {
      if (grantExpired(g, now)) await this.#store.deleteGrant(g.id);
      else out.push(g);
    }
    return out;
  }

  async #sandboxesUsing(tenant: string, name: string): Promise<Set<string>> {
    const ids = new Set((await this.#store.grants()).filter((g) => g.tenant === tenant && g.secret === name).map((g) => g.sandboxId));
    for (const [id, calls] of this.#perCall) for (const g of calls.values()) if (g.tenant === tenant && g.secret === name) ids.add(id);
    return ids;
  }
}
