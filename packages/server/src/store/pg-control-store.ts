import type { AuditQuery, AuditRecord, PolicyDocument, PolicyScope, TenantLimits } from '@forkd/protocol';
import type { ControlStore, KeyRecord, NetworkScope, OwnedKind } from './control-store.js';
import { toAudit, toKey, type AuditRow, type KeyRow } from './control-rows.js';
import { openPostgres, type Sql } from './pg-open.js';
import { PG_MIGRATIONS } from './pg-migrations.js';
import { PgFleetRecords } from './pg-fleet-records.js';
import { PgQuotaRecords } from './pg-quota-records.js';
import { PgApprovalRecords } from './pg-approval-records.js';
import { DelegatedRecords } from './delegated-records.js';
import { PgSecretRecords } from './pg-secret-records.js';
import { PgTemplateBuildRecords } from './pg-template-build-records.js';
import type { TemplateBuildRecords } from './template-build-records.js';

/**
 * The ControlStore on PostgreSQL (FORKD_DATABASE_URL): what lets several
 * control-plane replicas serve one fleet. Every guarantee of the SQLite one
 * holds across replicas: claims and leases are single statements, and work
 * that must happen once takes a lease (FleetStore.tryLease).
 */
export class PgControlStore extends DelegatedRecords implements ControlStore {
  readonly #sql: Sql;
  readonly templateBuilds: TemplateBuildRecords;

  private constructor(sql: Sql) {
    super(new PgSecretRecords(sql), new PgFleetRecords(sql), new PgQuotaRecords(sql), new PgApprovalRecords(sql));
    this.#sql = sql;
    this.templateBuilds = new PgTemplateBuildRecords(sql);
  }

  /** Connects and migrates; a wrong or unreachable URL is a ForkdError without the password. */
  static async open(url: string): Promise<PgControlStore> {
    return new PgControlStore(await openPostgres(url, PG_MIGRATIONS));
  }

  async insertKey(k: KeyRecord): Promise<void> {
    await this.#sql`INSERT INTO api_keys (id, tenant, hash, prefix, name, admin, created_at, revoked_at)
      VALUES (${k.id}, ${k.tenant}, ${k.hash}, ${k.prefix}, ${k.name ?? null}, ${k.admin}, ${k.createdAt}, ${k.revokedAt ?? null})`;
  }

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const [r] = await this.#sql<KeyRow[]>`SELECT * FROM api_keys WHERE hash = ${hash}`;
    return r && toKey(r);
  }

  async listKeys(tenant?: string): Promise<KeyRecord[]> {
    const rows = tenant === undefined
      ? await this.#sql<KeyRow[]>`SELECT * FROM api_keys ORDER BY created_at, id`
      : await this.#sql<KeyRow[]>`SELECT * FROM api_keys WHERE tenant = ${tenant} ORDER BY created_at, id`;
    return rows.map(toKey);
  }

  async revokeKey(id: string, at: string, tenant?: string): Promise<boolean> {
    const r = tenant === undefined
      ? await this.#sql`UPDATE api_keys SET revoked_at = ${at} WHERE id = ${id} AND revoked_at IS NULL`
      : await this.#sql`UPDATE api_keys SET revoked_at = ${at} WHERE id = ${id} AND tenant = ${tenant} AND revoked_at IS NULL`;
    return r.count === 1;
  }

  async setOwner(kind: OwnedKind, id: string, tenant: string): Promise<void> {
    await this.#sql`INSERT INTO owners (kind, id, tenant) VALUES (${kind}, ${id}, ${tenant}) ON CONFLICT (kind, id) DO UPDATE SET tenant = excluded.tenant`;
  }

  async claimOwner(kind: OwnedKind, id: string, tenant: string): Promise<string> {
    // DO UPDATE to the same value, not DO NOTHING: it waits for a racing insert and returns the row that won, in one statement.
    const [r] = await this.#sql<{ tenant: string }[]>`INSERT INTO owners (kind, id, tenant) VALUES (${kind}, ${id}, ${tenant})
      ON CONFLICT (kind, id) DO UPDATE SET tenant = owners.tenant RETURNING tenant`;
    return r!.tenant;
  }

  async dropOwner(kind: OwnedKind, id: string): Promise<void> {
    await this.#sql`DELETE FROM owners WHERE kind = ${kind} AND id = ${id}`;
  }

  async owner(kind: OwnedKind, id: string): Promise<string | undefined> {
    const [r] = await this.#sql<{ tenant: string }[]>`SELECT tenant FROM owners WHERE kind = ${kind} AND id = ${id}`;
    return r?.tenant;
  }

  async owned(kind: OwnedKind, tenant: string): Promise<Set<string>> {
    return new Set((await this.#sql<{ id: string }[]>`SELECT id FROM owners WHERE kind = ${kind} AND tenant = ${tenant}`).map((r) => r.id));
  }

  async owners(kind: OwnedKind): Promise<Map<string, string>> {
    return new Map((await this.#sql<{ id: string; tenant: string }[]>`SELECT id, tenant FROM owners WHERE kind = ${kind}`).map((r) => [r.id, r.tenant]));
  }

  async setTokenHash(id: string, hash: string): Promise<void> {
    await this.#sql`INSERT INTO sandbox_token_hashes (id, hash) VALUES (${id}, ${hash}) ON CONFLICT (id) DO UPDATE SET hash = excluded.hash`;
  }

  async tokenHash(id: string): Promise<string | undefined> {
    const [r] = await this.#sql<{ hash: string }[]>`SELECT hash FROM sandbox_token_hashes WHERE id = ${id}`;
    return r?.hash;
  }

  async tenantLimits(tenant: string): Promise<TenantLimits | undefined> {
    const [r] = await this.#sql<{ limits: string }[]>`SELECT limits FROM tenant_limits WHERE tenant = ${tenant}`;
    return r && (JSON.parse(r.limits) as TenantLimits);
  }

  async setTenantLimits(tenant: string, limits: TenantLimits): Promise<void> {
    if (Object.keys(limits).length === 0) await this.#sql`DELETE FROM tenant_limits WHERE tenant = ${tenant}`;
    else await this.#sql`INSERT INTO tenant_limits (tenant, limits, updated_at) VALUES (${tenant}, ${JSON.stringify(limits)}, ${new Date().toISOString()})
      ON CONFLICT (tenant) DO UPDATE SET limits = excluded.limits, updated_at = excluded.updated_at`;
  }

  async policy(scope: PolicyScope, id: string): Promise<PolicyDocument | undefined> {
    const [r] = await this.#sql<{ policy: string }[]>`SELECT policy FROM policies WHERE scope = ${scope} AND id = ${id}`;
    return r && (JSON.parse(r.policy) as PolicyDocument);
  }

  async setPolicy(scope: PolicyScope, id: string, policy: PolicyDocument): Promise<void> {
    if (Object.keys(policy).length === 0) await this.#sql`DELETE FROM policies WHERE scope = ${scope} AND id = ${id}`;
    else await this.#sql`INSERT INTO policies (scope, id, policy, updated_at) VALUES (${scope}, ${id}, ${JSON.stringify(policy)}, ${new Date().toISOString()})
      ON CONFLICT (scope, id) DO UPDATE SET policy = excluded.policy, updated_at = excluded.updated_at`;
  }

  async networkSetting(scope: NetworkScope, name: string): Promise<unknown> {
    const [r] = await this.#sql<{ setting: string }[]>`SELECT setting FROM network_settings WHERE scope = ${scope} AND name = ${name}`;
    return r && (JSON.parse(r.setting) as unknown);
  }

  async setNetworkSetting(scope: NetworkScope, name: string, setting: unknown): Promise<void> {
    if (setting === undefined) await this.#sql`DELETE FROM network_settings WHERE scope = ${scope} AND name = ${name}`;
    else await this.#sql`INSERT INTO network_settings (scope, name, setting, updated_at) VALUES (${scope}, ${name}, ${JSON.stringify(setting)}, ${new Date().toISOString()})
      ON CONFLICT (scope, name) DO UPDATE SET setting = excluded.setting, updated_at = excluded.updated_at`;
  }

  async pruneAudit(before: string): Promise<number> {
    return (await this.#sql`DELETE FROM audit WHERE at < ${before}`).count;
  }

  async appendAudit(a: Omit<AuditRecord, 'id'>): Promise<void> {
    await this.#sql`INSERT INTO audit (at, key_id, tenant, sandbox_id, operation, target, code, status, duration_ms, request_id)
      VALUES (${a.at}, ${a.keyId ?? null}, ${a.tenant ?? null}, ${a.sandboxId ?? null}, ${a.operation}, ${a.target ?? null}, ${a.code}, ${a.status}, ${a.durationMs}, ${a.requestId ?? null})`;
  }

  async queryAudit(q: AuditQuery & { tenant?: string | undefined }): Promise<AuditRecord[]> {
    const where: string[] = [];
    const args: (string | number)[] = [];
    const add = (column: string, op: string, v: string | number | undefined) => {
      if (v === undefined) return;
      args.push(v);
      where.push(`${column} ${op} $${args.length}`);
    };
    add('tenant', '=', q.tenant);
    add('sandbox_id', '=', q.sandbox);
    add('operation', '=', q.operation);
    add('code', '=', q.code);
    add('at', '>=', q.since && new Date(q.since).toISOString());
    add('id', '<', q.before);
    add('id', '>', q.after);
    args.push(q.limit);
    // Following the log (after) reads forward; everything else is newest first. Values are bound, never spliced.
    const text = `SELECT * FROM audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${q.after !== undefined ? 'ASC' : 'DESC'} LIMIT $${args.length}`;
    return (await this.#sql.unsafe<AuditRow[]>(text, args)).map(toAudit);
  }

  async ping(): Promise<void> {
    await this.#sql`SELECT 1 FROM forkd_schema LIMIT 1`;
  }

  async close(): Promise<void> {
    await this.#sql.end({ timeout: 5 });
  }
}
