import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { AuditQuery, AuditRecord, PolicyDocument, PolicyScope, TenantLimits } from '@forkd/protocol';
import type { ControlStore, KeyRecord, NetworkScope, OwnedKind } from './control-store.js';
import { openSqlite } from './sqlite-open.js';
import { toAudit, toKey, type AuditRow, type KeyRow } from './control-rows.js';
import { SECRET_MIGRATION, SqliteSecretRecords } from './sqlite-secret-records.js';
import { FLEET_MIGRATION, SqliteFleetRecords } from './sqlite-fleet-records.js';
import { QUOTA_MIGRATION, SqliteQuotaRecords } from './sqlite-quota-records.js';
import { APPROVAL_MIGRATION, SqliteApprovalRecords } from './sqlite-approval-records.js';
import { SqliteTemplateBuildRecords, TEMPLATE_BUILD_MIGRATION } from './sqlite-template-build-records.js';
import type { TemplateBuildRecords } from './template-build-records.js';
import { DelegatedRecords } from './delegated-records.js';

const MIGRATIONS = [
  `CREATE TABLE api_keys (
     id TEXT PRIMARY KEY,
     tenant TEXT NOT NULL,
     hash TEXT NOT NULL UNIQUE,
     prefix TEXT NOT NULL,
     name TEXT,
     admin INTEGER NOT NULL,
     created_at TEXT NOT NULL,
     revoked_at TEXT
   );
   CREATE TABLE owners (
     kind TEXT NOT NULL,
     id TEXT NOT NULL,
     tenant TEXT NOT NULL,
     PRIMARY KEY (kind, id)
   );
   CREATE INDEX owners_by_tenant ON owners (tenant, kind);
   CREATE TABLE audit (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     at TEXT NOT NULL,
     key_id TEXT,
     tenant TEXT,
     sandbox_id TEXT,
     operation TEXT NOT NULL,
     target TEXT,
     code TEXT NOT NULL,
     status INTEGER NOT NULL,
     duration_ms REAL NOT NULL
   );
   CREATE INDEX audit_by_tenant ON audit (tenant, id);`,
  `CREATE TABLE sandbox_tokens (
     id TEXT PRIMARY KEY,
     token TEXT NOT NULL
   );`,
  `ALTER TABLE audit ADD COLUMN request_id TEXT;`,
  // Tokens are kept as hashes from here on; the plain ones of sandbox_tokens are moved over at open (see #hashOldTokens).
  `CREATE TABLE sandbox_token_hashes (
     id TEXT PRIMARY KEY,
     hash TEXT NOT NULL
   );
   CREATE INDEX audit_by_at ON audit (at);`,
  // JSON: the set of limits grows without a migration each time.
  `CREATE TABLE tenant_limits (
     tenant TEXT PRIMARY KEY,
     limits TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );`,
  // Per-call policies (JSON, like tenant limits) by scope: tenant, template or sandbox.
  `CREATE TABLE policies (
     scope TEXT NOT NULL,
     id TEXT NOT NULL,
     policy TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (scope, id)
   );`,
  // After main's migrations: a database that already has them must still get this one.
  SECRET_MIGRATION,
  // JSON, parsed by its reader (control-plane/network/network-policies.ts).
  `CREATE TABLE network_settings (
     scope TEXT NOT NULL,
     name TEXT NOT NULL,
     setting TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (scope, name)
   );`,
  // Template settings move from the name to templateKey (see control-plane/template-scope.ts).
  templateSettingsByKey('policies', 'id', 'policy') + templateSettingsByKey('network_settings', 'name', 'setting'),
  // Nodes, placement, exports and leases (fleet/fleet-store.ts).
  FLEET_MIGRATION,
  // Quota reservations of operations in flight (store/quota-records.ts).
  QUOTA_MIGRATION,
  // Calls waiting for approval (store/approval-records.ts).
  APPROVAL_MIGRATION,
  // E2B's template builder: builds, their logs, uploaded files, tags (store/template-build-records.ts).
  TEMPLATE_BUILD_MIGRATION,
];

/**
 * Rewrites a table's template rows from `name` to `tenant/id`; the id of a
 * template made before ids is its name. An owned template's go to its owner;
 * a shared one's (`base`), which governed every tenant, to each tenant known
 * here, and '' (sandboxes without an owner): nobody loses a restriction.
 */
function templateSettingsByKey(table: string, col: string, value: string): string {
  return `INSERT OR IGNORE INTO ${table} (scope, ${col}, ${value}, updated_at)
     SELECT 'template', k.tenant || '/' || p.${col}, p.${value}, p.updated_at
     FROM ${table} p, (SELECT tenant FROM api_keys UNION SELECT tenant FROM owners UNION SELECT tenant FROM tenant_limits UNION SELECT '' AS tenant) k
     WHERE p.scope = 'template' AND instr(p.${col}, '/') = 0
       AND k.tenant = COALESCE((SELECT o.tenant FROM owners o WHERE o.kind = 'template' AND o.id = p.${col}), k.tenant);
   DELETE FROM ${table} WHERE scope = 'template' AND instr(${col}, '/') = 0;`;
}

/** The default ControlStore: its own SQLite file next to the node's (PostgreSQL when the control plane scales out). */
export class SqliteControlStore extends DelegatedRecords implements ControlStore {
  readonly #db: Database.Database;
  readonly templateBuilds: TemplateBuildRecords;

  constructor(file: string) {
    const db = openSqlite(file, MIGRATIONS);
    super(new SqliteSecretRecords(db), new SqliteFleetRecords(db), new SqliteQuotaRecords(db), new SqliteApprovalRecords(db));
    this.#db = db;
    this.templateBuilds = new SqliteTemplateBuildRecords(db);
    this.#hashOldTokens();
  }

  /**
   * Older versions stored proxy tokens in plain text: they are hashed (the
   * same tokens keep working) and the plain rows deleted with secure_delete,
   * so the freed pages do not keep them either.
   */
  #hashOldTokens(): void {
    const old = this.#db.prepare('SELECT id, token FROM sandbox_tokens').all() as { id: string; token: string }[];
    if (old.length === 0) return;
    this.#db.pragma('secure_delete = ON');
    this.#db.transaction(() => {
      const put = this.#db.prepare('INSERT OR IGNORE INTO sandbox_token_hashes (id, hash) VALUES (?, ?)');
      for (const r of old) put.run(r.id, createHash('sha256').update(r.token).digest('hex'));
      this.#db.prepare('DELETE FROM sandbox_tokens').run();
    })();
    this.#db.pragma('wal_checkpoint(TRUNCATE)');
  }

  async insertKey(k: KeyRecord): Promise<void> {
    this.#db
      .prepare('INSERT INTO api_keys (id, tenant, hash, prefix, name, admin, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(k.id, k.tenant, k.hash, k.prefix, k.name ?? null, k.admin ? 1 : 0, k.createdAt, k.revokedAt ?? null);
  }

  async keyByHash(hash: string): Promise<KeyRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM api_keys WHERE hash = ?').get(hash) as KeyRow | undefined;
    return r && toKey(r);
  }

  async listKeys(tenant?: string): Promise<KeyRecord[]> {
    const rows = tenant === undefined ? this.#db.prepare('SELECT * FROM api_keys ORDER BY created_at').all() : this.#db.prepare('SELECT * FROM api_keys WHERE tenant = ? ORDER BY created_at').all(tenant);
    return (rows as KeyRow[]).map(toKey);
  }

  async revokeKey(id: string, at: string, tenant?: string): Promise<boolean> {
    const r = tenant === undefined
      ? this.#db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL').run(at, id)
      : this.#db.prepare('UPDATE api_keys SET revoked_at = ? WHERE id = ? AND tenant = ? AND revoked_at IS NULL').run(at, id, tenant);
    return r.changes === 1;
  }

  async setOwner(kind: OwnedKind, id: string, tenant: string): Promise<void> {
    this.#db.prepare('INSERT OR REPLACE INTO owners (kind, id, tenant) VALUES (?, ?, ?)').run(kind, id, tenant);
  }

  async claimOwner(kind: OwnedKind, id: string, tenant: string): Promise<string> {
    // One transaction, no await inside: the insert and the read see the same row even with other callers in between.
    return this.#db.transaction(() => {
      this.#db.prepare('INSERT OR IGNORE INTO owners (kind, id, tenant) VALUES (?, ?, ?)').run(kind, id, tenant);
      return (this.#db.prepare('SELECT tenant FROM owners WHERE kind = ? AND id = ?').get(kind, id) as { tenant: string }).tenant;
    })();
  }

  async dropOwner(kind: OwnedKind, id: string): Promise<void> {
    this.#db.prepare('DELETE FROM owners WHERE kind = ? AND id = ?').run(kind, id);
  }

  async owner(kind: OwnedKind, id: string): Promise<string | undefined> {
    return (this.#db.prepare('SELECT tenant FROM owners WHERE kind = ? AND id = ?').get(kind, id) as { tenant: string } | undefined)?.tenant;
  }

  async owned(kind: OwnedKind, tenant: string): Promise<Set<string>> {
    return new Set((this.#db.prepare('SELECT id FROM owners WHERE kind = ? AND tenant = ?').all(kind, tenant) as { id: string }[]).map((r) => r.id));
  }

  async owners(kind: OwnedKind): Promise<Map<string, string>> {
    return new Map((this.#db.prepare('SELECT id, tenant FROM owners WHERE kind = ?').all(kind) as { id: string; tenant: string }[]).map((r) => [r.id, r.tenant]));
  }

  async setTokenHash(id: string, hash: string): Promise<void> {
    this.#db.prepare('INSERT OR REPLACE INTO sandbox_token_hashes (id, hash) VALUES (?, ?)').run(id, hash);
  }

  async tokenHash(id: string): Promise<string | undefined> {
    return (this.#db.prepare('SELECT hash FROM sandbox_token_hashes WHERE id = ?').get(id) as { hash: string } | undefined)?.hash;
  }

  async tenantLimits(tenant: string): Promise<TenantLimits | undefined> {
    const r = this.#db.prepare('SELECT limits FROM tenant_limits WHERE tenant = ?').get(tenant) as { limits: string } | undefined;
    return r && (JSON.parse(r.limits) as TenantLimits);
  }

  async setTenantLimits(tenant: string, limits: TenantLimits): Promise<void> {
    if (Object.keys(limits).length === 0) this.#db.prepare('DELETE FROM tenant_limits WHERE tenant = ?').run(tenant);
    else this.#db.prepare('INSERT OR REPLACE INTO tenant_limits (tenant, limits, updated_at) VALUES (?, ?, ?)').run(tenant, JSON.stringify(limits), new Date().toISOString());
  }

  async policy(scope: PolicyScope, id: string): Promise<PolicyDocument | undefined> {
    const r = this.#db.prepare('SELECT policy FROM policies WHERE scope = ? AND id = ?').get(scope, id) as { policy: string } | undefined;
    return r && (JSON.parse(r.policy) as PolicyDocument);
  }

  async setPolicy(scope: PolicyScope, id: string, policy: PolicyDocument): Promise<void> {
    if (Object.keys(policy).length === 0) this.#db.prepare('DELETE FROM policies WHERE scope = ? AND id = ?').run(scope, id);
    else this.#db.prepare('INSERT OR REPLACE INTO policies (scope, id, policy, updated_at) VALUES (?, ?, ?, ?)').run(scope, id, JSON.stringify(policy), new Date().toISOString());
  }

  async networkSetting(scope: NetworkScope, name: string): Promise<unknown> {
    const r = this.#db.prepare('SELECT setting FROM network_settings WHERE scope = ? AND name = ?').get(scope, name) as { setting: string } | undefined;
    return r && (JSON.parse(r.setting) as unknown);
  }

  async setNetworkSetting(scope: NetworkScope, name: string, setting: unknown): Promise<void> {
    if (setting === undefined) this.#db.prepare('DELETE FROM network_settings WHERE scope = ? AND name = ?').run(scope, name);
    else this.#db.prepare('INSERT OR REPLACE INTO network_settings (scope, name, setting, updated_at) VALUES (?, ?, ?, ?)').run(scope, name, JSON.stringify(setting), new Date().toISOString());
  }

  async pruneAudit(before: string): Promise<number> {
    return this.#db.prepare('DELETE FROM audit WHERE at < ?').run(before).changes;
  }

  async appendAudit(a: Omit<AuditRecord, 'id'>): Promise<void> {
    this.#db
      .prepare('INSERT INTO audit (at, key_id, tenant, sandbox_id, operation, target, code, status, duration_ms, request_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(a.at, a.keyId ?? null, a.tenant ?? null, a.sandboxId ?? null, a.operation, a.target ?? null, a.code, a.status, a.durationMs, a.requestId ?? null);
  }

  async queryAudit(q: AuditQuery & { tenant?: string | undefined }): Promise<AuditRecord[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (sql: string, v: unknown) => {
      if (v === undefined) return;
      where.push(sql);
      args.push(v);
    };
    add('tenant = ?', q.tenant);
    add('sandbox_id = ?', q.sandbox);
    add('operation = ?', q.operation);
    add('code = ?', q.code);
    add('at >= ?', q.since && new Date(q.since).toISOString());
    add('id < ?', q.before);
    add('id > ?', q.after);
    // Following the log (after) reads forward; everything else is newest first.
    const sql = `SELECT * FROM audit ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY id ${q.after !== undefined ? 'ASC' : 'DESC'} LIMIT ?`;
    return (this.#db.prepare(sql).all(...args, q.limit) as AuditRow[]).map(toAudit);
  }

  async ping(): Promise<void> {
    this.#db.prepare('SELECT 1 FROM api_keys LIMIT 1').get();
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
