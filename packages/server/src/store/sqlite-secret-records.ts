import type Database from 'better-sqlite3';
import { grantSpec, toGrant, type GrantRecord, type GrantRow, type SecretRecord, type SecretRecords } from './secret-records.js';

export const SECRET_MIGRATION = `CREATE TABLE secrets (
     tenant TEXT NOT NULL,
     name TEXT NOT NULL,
     sealed BLOB NOT NULL,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (tenant, name)
   );
   CREATE TABLE grants (
     id TEXT PRIMARY KEY,
     tenant TEXT NOT NULL,
     sandbox_id TEXT NOT NULL,
     secret TEXT NOT NULL,
     spec TEXT NOT NULL,
     created_at TEXT NOT NULL,
     expires_at TEXT
   );
   CREATE INDEX grants_by_sandbox ON grants (sandbox_id);`;

/** SecretRecords over the control store's SQLite database (tables of SECRET_MIGRATION). */
export class SqliteSecretRecords implements SecretRecords {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
    // A replaced or removed value's sealed bytes are zeroed in the file, not left in a free page.
    this.#db.pragma('secure_delete = ON');
  }

  async putSecret(tenant: string, name: string, sealed: Buffer, at: string): Promise<void> {
    this.#db
      .prepare('INSERT INTO secrets (tenant, name, sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at')
      .run(tenant, name, sealed, at, at);
  }

  async secret(tenant: string, name: string): Promise<SecretRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM secrets WHERE tenant = ? AND name = ?').get(tenant, name) as { tenant: string; name: string; sealed: Buffer; created_at: string; updated_at: string } | undefined;
    return r && { tenant: r.tenant, name: r.name, sealed: r.sealed, createdAt: r.created_at, updatedAt: r.updated_at };
  }

  async listSecrets(tenant: string): Promise<Omit<SecretRecord, 'sealed'>[]> {
    const rows = this.#db.prepare('SELECT tenant, name, created_at, updated_at FROM secrets WHERE tenant = ? ORDER BY name').all(tenant) as { tenant: string; name: string; created_at: string; updated_at: string }[];
    return rows.map((r) => ({ tenant: r.tenant, name: r.name, createdAt: r.created_at, updatedAt: r.updated_at }));
  }

  async deleteSecret(tenant: string, name: string): Promise<boolean> {
    return this.#db.prepare('DELETE FROM secrets WHERE tenant = ? AND name = ?').run(tenant, name).changes === 1;
  }

  async insertGrant(g: GrantRecord): Promise<void> {
    const spec = grantSpec(g);
    this.#db
      .prepare('INSERT INTO grants (id, tenant, sandbox_id, secret, spec, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(g.id, g.tenant, g.sandboxId, g.secret, JSON.stringify(spec), g.createdAt, g.expiresAt ?? null);
  }

  async grants(sandboxId?: string): Promise<GrantRecord[]> {
    const rows = sandboxId === undefined ? this.#db.prepare('SELECT * FROM grants ORDER BY created_at, id').all() : this.#db.prepare('SELECT * FROM grants WHERE sandbox_id = ? ORDER BY created_at, id').all(sandboxId);
    return (rows as GrantRow[]).map(toGrant);
  }

  async deleteGrant(id: string): Promise<boolean> {
    return this.#db.prepare('DELETE FROM grants WHERE id = ?').run(id).changes === 1;
  }
}
