import type Database from 'better-sqlite3';
import type { ApprovalInfo } from '@forkd/protocol';
import type { ApprovalDecision, ApprovalRecords } from './approval-records.js';

export const APPROVAL_MIGRATION = `CREATE TABLE approvals (
     id TEXT PRIMARY KEY,
     tenant TEXT NOT NULL,
     info TEXT NOT NULL,
     decision TEXT,
     created_at TEXT NOT NULL,
     expires_at TEXT NOT NULL
   );
   CREATE INDEX approvals_by_tenant ON approvals (tenant, created_at);`;

/** A row's info of either database (PostgreSQL hands jsonb back parsed). */
export function toApproval(info: string | ApprovalInfo): ApprovalInfo {
  return typeof info === 'string' ? (JSON.parse(info) as ApprovalInfo) : info;
}

export class SqliteApprovalRecords implements ApprovalRecords {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  async putApproval(a: ApprovalInfo): Promise<void> {
    this.#db.prepare('DELETE FROM approvals WHERE expires_at <= ?').run(new Date().toISOString());
    this.#db.prepare('INSERT INTO approvals (id, tenant, info, decision, created_at, expires_at) VALUES (?, ?, ?, NULL, ?, ?)').run(a.id, a.tenant, JSON.stringify(a), a.createdAt, a.expiresAt);
  }

  async pendingApprovals(tenant: string | undefined, now: string): Promise<ApprovalInfo[]> {
    const rows = this.#db
      .prepare('SELECT info FROM approvals WHERE decision IS NULL AND expires_at > ? AND (? IS NULL OR tenant = ?) ORDER BY created_at, id')
      .all(now, tenant ?? null, tenant ?? null) as { info: string }[];
    return rows.map((r) => toApproval(r.info));
  }

  async decideApproval(id: string, decision: ApprovalDecision, tenant: string | undefined, now: string): Promise<ApprovalInfo | undefined> {
    const r = this.#db
      .prepare('UPDATE approvals SET decision = ? WHERE id = ? AND decision IS NULL AND expires_at > ? AND (? IS NULL OR tenant = ?) RETURNING info')
      .get(decision, id, now, tenant ?? null, tenant ?? null) as { info: string } | undefined;
    return r && toApproval(r.info);
  }

  async approvalDecisions(ids: readonly string[]): Promise<Map<string, ApprovalDecision>> {
    if (ids.length === 0) return new Map();
    const rows = this.#db.prepare(`SELECT id, decision FROM approvals WHERE decision IS NOT NULL AND id IN (${ids.map(() => '?').join(', ')})`).all(...ids) as { id: string; decision: ApprovalDecision }[];
    return new Map(rows.map((r) => [r.id, r.decision]));
  }

  async dropApproval(id: string): Promise<void> {
    this.#db.prepare('DELETE FROM approvals WHERE id = ?').run(id);
  }
}
