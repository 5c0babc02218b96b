import type { AuditQuery, AuditRecord, TenantLimits } from '@forkd/protocol';

export interface KeyRecord {
  id: string;
  tenant: string;
  /** SHA-256 of the key: keys are 160+ random bits, so a fast hash cannot be brute-forced. */
  hash: string;
  prefix: string;
  name?: string | undefined;
  admin: boolean;
  createdAt: string;
  revokedAt?: string | undefined;
}

/** What the control plane owns beside the nodes: who may call, what each tenant owns, what was done. */
export interface ControlStore {
  insertKey(rec: KeyRecord): void;
  keyByHash(hash: string): KeyRecord | undefined;
  listKeys(tenant?: string): KeyRecord[];
  /** Returns false when no such key is active (in that tenant, when given). */
  revokeKey(id: string, at: string, tenant?: string): boolean;
  setOwner(kind: OwnedKind, id: string, tenant: string): void;
  /**
   * Records `tenant` as the owner unless the object already has one, in one
   * statement (two tenants racing for a template name cannot both win).
   * Returns the owner after the call: `tenant` when it won or already owned it.
   */
  claimOwner(kind: OwnedKind, id: string, tenant: string): string;
  dropOwner(kind: OwnedKind, id: string): void;
  owner(kind: OwnedKind, id: string): string | undefined;
  /** Every id of a kind a tenant owns. */
  owned(kind: OwnedKind, tenant: string): Set<string>;
  /**
   * The SHA-256 of a sandbox's port-proxy token: minted by the control plane,
   * shown once, never stored in the sandbox nor in plain text here.
   */
  setTokenHash(id: string, hash: string): void;
  tokenHash(id: string): string | undefined;
  /** A tenant's limit overrides (absent: the server's defaults apply). */
  tenantLimits(tenant: string): TenantLimits | undefined;
  /** Replaces a tenant's overrides; `{}` removes them. */
  setTenantLimits(tenant: string, limits: TenantLimits): void;
  appendAudit(rec: Omit<AuditRecord, 'id'>): void;
  /** Deletes audit records older than `before` (ISO time); returns how many. */
  pruneAudit(before: string): number;
  queryAudit(q: AuditQuery & { tenant?: string | undefined }): AuditRecord[];
  close(): void;
}

export type OwnedKind = 'sandbox' | 'template';
