import type { FleetStore } from '../fleet/fleet-store.js';
import type { SecretRecords } from './secret-records.js';
import type { QuotaRecords } from './quota-records.js';
import type { ApprovalRecords } from './approval-records.js';
import type { TemplateBuildRecords } from './template-build-records.js';
import type { AuditQuery, AuditRecord, PolicyDocument, PolicyScope, TenantLimits } from '@forkd/protocol';

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

/**
 * What the control plane owns beside the nodes: who may call, what each
 * tenant owns, what was done, and its fleet. SQLite embedded, PostgreSQL
 * (FORKD_DATABASE_URL) when several control-plane replicas share it.
 */
export interface ControlStore extends SecretRecords, FleetStore, QuotaRecords, ApprovalRecords {
  /** E2B's template builder's builds, logs, uploads and tags. */
  readonly templateBuilds: TemplateBuildRecords;
  insertKey(rec: KeyRecord): Promise<void>;
  keyByHash(hash: string): Promise<KeyRecord | undefined>;
  listKeys(tenant?: string): Promise<KeyRecord[]>;
  /** Returns false when no such key is active (in that tenant, when given). */
  revokeKey(id: string, at: string, tenant?: string): Promise<boolean>;
  setOwner(kind: OwnedKind, id: string, tenant: string): Promise<void>;
  /**
   * Records `tenant` as the owner unless the object already has one, in one
   * statement (two tenants racing for a template name cannot both win).
   * Returns the owner after the call: `tenant` when it won or already owned it.
   */
  claimOwner(kind: OwnedKind, id: string, tenant: string): Promise<string>;
  dropOwner(kind: OwnedKind, id: string): Promise<void>;
  owner(kind: OwnedKind, id: string): Promise<string | undefined>;
  /** Every id of a kind a tenant owns. */
  owned(kind: OwnedKind, tenant: string): Promise<Set<string>>;
  /** Every owned id of a kind, with its owner (an admin's view of all tenants). */
  owners(kind: OwnedKind): Promise<Map<string, string>>;
  /**
   * The SHA-256 of a sandbox's port-proxy token: minted by the control plane,
   * shown once, never stored in the sandbox nor in plain text here.
   */
  setTokenHash(id: string, hash: string): Promise<void>;
  tokenHash(id: string): Promise<string | undefined>;
  /** A tenant's limit overrides (absent: the server's defaults apply). */
  tenantLimits(tenant: string): Promise<TenantLimits | undefined>;
  /** Replaces a tenant's overrides; `{}` removes them. */
  setTenantLimits(tenant: string, limits: TenantLimits): Promise<void>;
  /** The policy attached to a tenant, a template or a sandbox (absent: none). */
  policy(scope: PolicyScope, id: string): Promise<PolicyDocument | undefined>;
  /** Replaces it whole; `{}` removes it. */
  setPolicy(scope: PolicyScope, id: string, policy: PolicyDocument): Promise<void>;
  /** A tenant's network policy or a template's default network, as stored (JSON; its reader parses it). */
  networkSetting(scope: NetworkScope, name: string): Promise<unknown>;
  /** Replaces it; undefined removes it. */
  setNetworkSetting(scope: NetworkScope, name: string, setting: unknown): Promise<void>;
  appendAudit(rec: Omit<AuditRecord, 'id'>): Promise<void>;
  /** Deletes audit records older than `before` (ISO time); returns how many. */
  pruneAudit(before: string): Promise<number>;
  queryAudit(q: AuditQuery & { tenant?: string | undefined }): Promise<AuditRecord[]>;
  /** A trivial read: resolves when the database answers (the control plane's health check bounds how long it may take). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export type OwnedKind = 'sandbox' | 'template';

export type NetworkScope = 'tenant' | 'template';
