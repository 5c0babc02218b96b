import type Database from 'better-sqlite3';
import type { TenantUsage } from '@forkd/protocol';
import type { QuotaRecords, QuotaReservationRecord } from './quota-records.js';

export const QUOTA_MIGRATION = `CREATE TABLE quota_reservations (
     id TEXT PRIMARY KEY,
     tenant TEXT NOT NULL,
     demand TEXT NOT NULL,
     sandbox_ids TEXT NOT NULL,
     expires_ms REAL NOT NULL
   );
   CREATE INDEX quota_reservations_by_tenant ON quota_reservations (tenant);`;

/** SQLite's clock in Unix milliseconds, as for leases. */
const NOW_MS = `((julianday('now') - 2440587.5) * 86400000.0)`;

export interface ReservationRow {
  id: string;
  tenant: string;
  demand: string | TenantUsage;
  sandbox_ids: string | string[];
}

/** A row of either database (PostgreSQL hands jsonb back parsed). */
export function toReservation(r: ReservationRow): QuotaReservationRecord {
  const json = <T>(v: string | T): T => (typeof v === 'string' ? (JSON.parse(v) as T) : v);
  return { id: r.id, tenant: r.tenant, demand: json<TenantUsage>(r.demand), sandboxIds: json<string[]>(r.sandbox_ids) };
}

export class SqliteQuotaRecords implements QuotaRecords {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  async putReservation(r: Omit<QuotaReservationRecord, 'sandboxIds'>, ttlMs: number): Promise<void> {
    this.#db.prepare(`DELETE FROM quota_reservations WHERE expires_ms <= ${NOW_MS}`).run();
    this.#db.prepare(`INSERT INTO quota_reservations (id, tenant, demand, sandbox_ids, expires_ms) VALUES (?, ?, ?, '[]', ${NOW_MS} + ?)`).run(r.id, r.tenant, JSON.stringify(r.demand), ttlMs);
  }

  async reservations(tenant: string): Promise<QuotaReservationRecord[]> {
    const rows = this.#db.prepare(`SELECT id, tenant, demand, sandbox_ids FROM quota_reservations WHERE tenant = ? AND expires_ms > ${NOW_MS} ORDER BY id`).all(tenant) as ReservationRow[];
    return rows.map(toReservation);
  }

  async bindReservation(id: string, sandboxId: string): Promise<void> {
    this.#db.prepare(`UPDATE quota_reservations SET sandbox_ids = json_insert(sandbox_ids, '$[#]', ?) WHERE id = ?`).run(sandboxId, id);
  }

  async dropReservation(id: string): Promise<void> {
    this.#db.prepare('DELETE FROM quota_reservations WHERE id = ?').run(id);
  }
}
