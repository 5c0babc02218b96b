import type { ApprovalInfo } from '@forkd/protocol';
import type { ApprovalDecision, ApprovalRecords } from './approval-records.js';
import type { Sql } from './pg-open.js';
import { toApproval } from './sqlite-approval-records.js';

/** ApprovalRecords over PostgreSQL (table of pg-migrations.ts). */
export class PgApprovalRecords implements ApprovalRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async putApproval(a: ApprovalInfo): Promise<void> {
    await this.#sql`DELETE FROM approvals WHERE expires_at <= ${new Date().toISOString()}`;
    await this.#sql`INSERT INTO approvals (id, tenant, info, decision, created_at, expires_at) VALUES (${a.id}, ${a.tenant}, ${JSON.stringify(a)}::jsonb, NULL, ${a.createdAt}, ${a.expiresAt})`;
  }

  async pendingApprovals(tenant: string | undefined, now: string): Promise<ApprovalInfo[]> {
    const rows = await this.#sql<{ info: ApprovalInfo }[]>`SELECT info FROM approvals WHERE decision IS NULL AND expires_at > ${now}
      AND (${tenant ?? null}::text IS NULL OR tenant = ${tenant ?? null}) ORDER BY created_at, id`;
    return rows.map((r) => toApproval(r.info));
  }

  async decideApproval(id: string, decision: ApprovalDecision, tenant: string | undefined, now: string): Promise<ApprovalInfo | undefined> {
    const [r] = await this.#sql<{ info: ApprovalInfo }[]>`UPDATE approvals SET decision = ${decision} WHERE id = ${id} AND decision IS NULL AND expires_at > ${now}
      AND (${tenant ?? null}::text IS NULL OR tenant = ${tenant ?? null}) RETURNING info`;
    return r && toApproval(r.info);
  }

  async approvalDecisions(ids: readonly string[]): Promise<Map<string, ApprovalDecision>> {
    if (ids.length === 0) return new Map();
    const rows = await this.#sql<{ id: string; decision: ApprovalDecision }[]>`SELECT id, decision FROM approvals WHERE decision IS NOT NULL AND id IN ${this.#sql([...ids])}`;
    return new Map(rows.map((r) => [r.id, r.decision]));
  }

  async dropApproval(id: string): Promise<void> {
    await this.#sql`DELETE FROM approvals WHERE id = ${id}`;
  }
}
