import { z } from 'zod';

/** The default per-sandbox disk quota (MB) counted for a sandbox whose request named none. */
export const DEFAULT_DISK_MB = 10240;

/** What a tenant's limits cap, in the order they are checked and shown. */
export const TENANT_LIMIT_NAMES = ['runningSandboxes', 'memoryMb', 'cpus', 'snapshots', 'diskMb'] as const;
export type TenantLimitName = (typeof TENANT_LIMIT_NAMES)[number];

/** A limit: a number, or null for none. */
const Count = z.number().int().min(0).max(1_000_000_000).nullable();

/**
 * Per-tenant limits, set by admin keys. Running sandboxes (`creating` and
 * `running`; paused ones use no CPU or memory), the memory and CPUs of those,
 * snapshots held (every reason counts; only API snapshots and live forks are
 * refused at the limit), and disk: the sum of the disk quotas (`diskMb`) of
 * every sandbox the tenant has, paused ones included.
 */
export const TenantLimits = z.strictObject({
  runningSandboxes: Count.optional(),
  memoryMb: Count.optional(),
  cpus: z.number().min(0).max(1_000_000).nullable().optional(),
  snapshots: Count.optional(),
  diskMb: Count.optional(),
});
export type TenantLimits = z.infer<typeof TenantLimits>;

/**
 * `PUT /v1/tenants/{tenant}/limits`: the tenant's overrides, replaced whole.
 * A number sets a limit, null removes it (unlimited), an absent field falls
 * back to the server's default (FORKD_TENANT_MAX_*). `{}` resets the tenant.
 */
export const PutTenantLimitsRequest = TenantLimits;
export type PutTenantLimitsRequest = z.input<typeof PutTenantLimitsRequest>;

export const TenantUsage = z.object({
  runningSandboxes: z.number(),
  memoryMb: z.number(),
  cpus: z.number(),
  snapshots: z.number(),
  diskMb: z.number(),
});
export type TenantUsage = z.infer<typeof TenantUsage>;

/** Effective limits: every name present, null where there is none. */
export const EffectiveTenantLimits = z.object({
  runningSandboxes: z.number().nullable(),
  memoryMb: z.number().nullable(),
  cpus: z.number().nullable(),
  snapshots: z.number().nullable(),
  diskMb: z.number().nullable(),
});
export type EffectiveTenantLimits = z.infer<typeof EffectiveTenantLimits>;

export const TenantLimitsInfo = z.object({
  tenant: z.string(),
  /** What applies now: the tenant's overrides over the server's defaults. */
  limits: EffectiveTenantLimits,
  /** What was set for this tenant (absent fields: the server's default). */
  overrides: TenantLimits,
  /** What the tenant holds now, counted as the limits count it. */
  usage: TenantUsage,
});
export type TenantLimitsInfo = z.infer<typeof TenantLimitsInfo>;
