import { z } from 'zod';

/** Tenants are named by the operator; the name is part of every key's scope. */
export const TenantName = z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'tenant: lowercase letters, digits and dashes, at most 63');

export { TENANT_HEADER } from './tenant-header.js';

export const CreateKeyRequest = z.strictObject({
  /** Default: the calling key's own tenant. */
  tenant: TenantName.optional(),
  /** `e2b`: `e2b_` + 40 hex digits, accepted by the official e2b SDKs. */
  format: z.enum(['forkd', 'e2b']).default('forkd'),
  name: z.string().max(100).optional(),
  /** May manage keys and read every tenant's audit records. */
  admin: z.boolean().default(false),
});
export type CreateKeyRequest = z.input<typeof CreateKeyRequest>;

export const KeyInfo = z.object({
  id: z.string(),
  tenant: z.string(),
  /** The first characters of the key, to recognise it; the key itself is never stored. */
  prefix: z.string(),
  name: z.string().optional(),
  admin: z.boolean(),
  createdAt: z.string(),
  revokedAt: z.string().optional(),
  lastUsedAt: z.string().optional(),
});
export type KeyInfo = z.infer<typeof KeyInfo>;

/** The only time a key is shown. */
export const CreatedKey = z.object({ key: z.string(), info: KeyInfo });
export type CreatedKey = z.infer<typeof CreatedKey>;

export const AuditRecord = z.object({
  id: z.number(),
  at: z.string(),
  keyId: z.string().optional(),
  tenant: z.string().optional(),
  sandboxId: z.string().optional(),
  /** `METHOD /route/pattern`, e.g. `POST /v1/sandboxes/:id/exec`. */
  operation: z.string(),
  /** The command run or the path touched, when there is one. */
  target: z.string().optional(),
  /** `OK` or an error code. */
  code: z.string(),
  status: z.number(),
  durationMs: z.number(),
  /** The request's id (`x-request-id`): the server's log has the same id on its lines about it. */
  requestId: z.string().optional(),
});
export type AuditRecord = z.infer<typeof AuditRecord>;

const intParam = (min: number, max: number) => z.coerce.number().int().min(min).max(max);

export const AuditQuery = z.strictObject({
  /** Admin keys only; every other key sees its own tenant's records. */
  tenant: TenantName.optional(),
  sandbox: z.string().max(64).optional(),
  operation: z.string().max(200).optional(),
  code: z.string().max(40).optional(),
  /** ISO time: records at or after it. */
  since: z.iso.datetime({ offset: true }).optional(),
  /** Records with a smaller id (paging backwards from the newest). */
  before: intParam(1, Number.MAX_SAFE_INTEGER).optional(),
  /** Records with a larger id, oldest first (following the log). */
  after: intParam(0, Number.MAX_SAFE_INTEGER).optional(),
  limit: intParam(1, 1000).default(100),
});
export type AuditQuery = z.infer<typeof AuditQuery>;
