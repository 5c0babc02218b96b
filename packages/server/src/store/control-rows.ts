import type { AuditRecord } from '@forkd/protocol';
import type { KeyRecord } from './control-store.js';

/** The control store's rows as SQLite and PostgreSQL return them (the same columns), and their records. */
export interface KeyRow {
  id: string;
  tenant: string;
  hash: string;
  prefix: string;
  name: string | null;
  /** SQLite: 0 or 1; PostgreSQL: a boolean. */
  admin: number | boolean;
  created_at: string;
  revoked_at: string | null;
}

export function toKey(r: KeyRow): KeyRecord {
  return { id: r.id, tenant: r.tenant, hash: r.hash, prefix: r.prefix, ...(r.name ? { name: r.name } : {}), admin: r.admin === 1 || r.admin === true, createdAt: r.created_at, ...(r.revoked_at ? { revokedAt: r.revoked_at } : {}) };
}

export interface AuditRow {
  /** PostgreSQL's BIGINT comes as a string. */
  id: number | string;
  at: string;
  key_id: string | null;
  tenant: string | null;
  sandbox_id: string | null;
  operation: string;
  target: string | null;
  code: string;
  status: number;
  duration_ms: number;
  request_id: string | null;
}

export function toAudit(r: AuditRow): AuditRecord {
  return {
    id: Number(r.id),
    at: r.at,
    ...(r.key_id ? { keyId: r.key_id } : {}),
    ...(r.tenant ? { tenant: r.tenant } : {}),
    ...(r.sandbox_id ? { sandboxId: r.sandbox_id } : {}),
    operation: r.operation,
    ...(r.target ? { target: r.target } : {}),
    code: r.code,
    status: r.status,
    durationMs: r.duration_ms,
    ...(r.request_id ? { requestId: r.request_id } : {}),
  };
}
