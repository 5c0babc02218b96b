import type { QuotaRecords, QuotaReservationRecord } from './quota-records.js';
import type { Sql } from './pg-open.js';
import { toReservation, type ReservationRow } from './sqlite-quota-records.js';

/** QuotaRecords over PostgreSQL (table of pg-migrations.ts); expiry by the server's clock. */
export class PgQuotaRecords implements QuotaRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async putReservation(r: Omit<QuotaReservationRecord, 'sandboxIds'>, ttlMs: number): Promise<void> {
    await this.#sql`DELETE FROM quota_reservations WHERE expires_at <= now()`;
    await this.#sql`INSERT INTO quota_reservations (id, tenant, demand, sandbox_ids, expires_at)
      VALUES (${r.id}, ${r.tenant}, ${JSON.stringify(r.demand)}::jsonb, '[]'::jsonb, now() + ${ttlMs}::double precision * interval '1 millisecond')`;
  }

  async reservations(tenant: string): Promise<QuotaReservationRecord[]> {
    const rows = await this.#sql<ReservationRow[]>`SELECT id, tenant, demand, sandbox_ids FROM quota_reservations WHERE tenant = ${tenant} AND expires_at > now() ORDER BY id`;
    return rows.map(toReservation);
  }

  async bindReservation(id: string, sandboxId: string): Promise<void> {
    await this.#sql`UPDATE quota_reservations SET sandbox_ids = sandbox_ids || to_jsonb(${sandboxId}::text) WHERE id = ${id}`;
  }

  async dropReservation(id: string): Promise<void> {
    await this.#sql`DELETE FROM quota_reservations WHERE id = ${id}`;
  }
}
