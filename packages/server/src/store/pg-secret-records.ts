import type { Sql } from './pg-open.js';
import { grantSpec, toGrant, type GrantRecord, type GrantRow, type SecretRecord, type SecretRecords } from './secret-records.js';

/**
 * SecretRecords over PostgreSQL (tables of pg-migrations.ts). Unlike
 * SQLite's secure_delete, a replaced sealed value stays in dead tuples until
 * VACUUM: it is sealed (AES-256-GCM) and its key is not in the database.
 */
export class PgSecretRecords implements SecretRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async putSecret(tenant: string, name: string, sealed: Buffer, at: string): Promise<void> {
    await this.#sql`INSERT INTO secrets (tenant, name, sealed, created_at, updated_at) VALUES (${tenant}, ${name}, ${sealed}, ${at}, ${at})
      ON CONFLICT (tenant, name) DO UPDATE SET sealed = excluded.sealed, updated_at = excluded.updated_at`;
  }

  async secret(tenant: string, name: string): Promise<SecretRecord | undefined> {
    const [r] = await this.#sql<{ tenant: string; name: string; sealed: Buffer; created_at: string; updated_at: string }[]>`SELECT * FROM secrets WHERE tenant = ${tenant} AND name = ${name}`;
    return r && { tenant: r.tenant, name: r.name, sealed: Buffer.from(r.sealed), createdAt: r.created_at, updatedAt: r.updated_at };
  }

  async listSecrets(tenant: string): Promise<Omit<SecretRecord, 'sealed'>[]> {
    const rows = await this.#sql<{ tenant: string; name: string; created_at: string; updated_at: string }[]>`SELECT tenant, name, created_at, updated_at FROM secrets WHERE tenant = ${tenant} ORDER BY name`;
    return rows.map((r) => ({ tenant: r.tenant, name: r.name, createdAt: r.created_at, updatedAt: r.updated_at }));
  }

  async deleteSecret(tenant: string, name: string): Promise<boolean> {
    return (await this.#sql`DELETE FROM secrets WHERE tenant = ${tenant} AND name = ${name}`).count === 1;
  }

  async insertGrant(g: GrantRecord): Promise<void> {
    const spec = grantSpec(g);
    await this.#sql`INSERT INTO grants (id, tenant, sandbox_id, secret, spec, created_at, expires_at)
      VALUES (${g.id}, ${g.tenant}, ${g.sandboxId}, ${g.secret}, ${JSON.stringify(spec)}, ${g.createdAt}, ${g.expiresAt ?? null})`;
  }

  async grants(sandboxId?: string): Promise<GrantRecord[]> {
    const rows = sandboxId === undefined
      ? await this.#sql<GrantRow[]>`SELECT * FROM grants ORDER BY created_at, id`
      : await this.#sql<GrantRow[]>`SELECT * FROM grants WHERE sandbox_id = ${sandboxId} ORDER BY created_at, id`;
    return rows.map(toGrant);
  }

  async deleteGrant(id: string): Promise<boolean> {
    return (await this.#sql`DELETE FROM grants WHERE id = ${id}`).count === 1;
  }
}
