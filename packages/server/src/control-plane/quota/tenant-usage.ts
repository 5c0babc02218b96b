import { DEFAULT_DISK_MB, ForkdError, TENANT_LIMIT_NAMES, type EffectiveTenantLimits, type SandboxInfo, type TenantLimits, type TenantUsage } from '@forkd/protocol';

export const NO_USAGE: TenantUsage = { runningSandboxes: 0, memoryMb: 0, cpus: 0, snapshots: 0, diskMb: 0 };

export const UNLIMITED: EffectiveTenantLimits = { runningSandboxes: null, memoryMb: null, cpus: null, snapshots: null, diskMb: null };

/** States whose sandbox holds (or is about to hold) CPU and memory; paused and failed ones hold only disk. */
const ACTIVE = new Set<SandboxInfo['state']>(['creating', 'running']);

/** The disk quota a sandbox is counted with: its own, or the default one until it has one. */
export function diskMbOf(limits: SandboxInfo['limits']): number {
  return limits.diskMb ?? DEFAULT_DISK_MB;
}

/** What one sandbox adds to its tenant's usage, in the state it is in. */
export function sandboxUsage(s: Pick<SandboxInfo, 'state' | 'limits'>): TenantUsage {
  if (s.state === 'stopping') return NO_USAGE;
  const active = ACTIVE.has(s.state);
  return { runningSandboxes: active ? 1 : 0, memoryMb: active ? s.limits.memoryMb : 0, cpus: active ? s.limits.cpus : 0, snapshots: 0, diskMb: diskMbOf(s.limits) };
}

export function addUsage(a: TenantUsage, b: TenantUsage, times = 1): TenantUsage {
  return {
    runningSandboxes: a.runningSandboxes + times * b.runningSandboxes,
    memoryMb: a.memoryMb + times * b.memoryMb,
    cpus: Math.round((a.cpus + times * b.cpus) * 1000) / 1000,
    snapshots: a.snapshots + times * b.snapshots,
    diskMb: a.diskMb + times * b.diskMb,
  };
}

/** What a new sandbox with these limits will hold once running. */
export function newSandboxDemand(limits: Pick<SandboxInfo['limits'], 'memoryMb' | 'cpus'> & { diskMb?: number | undefined }): TenantUsage {
  return { runningSandboxes: 1, memoryMb: limits.memoryMb, cpus: limits.cpus, snapshots: 0, diskMb: limits.diskMb ?? DEFAULT_DISK_MB };
}

/** The tenant's overrides over the server's defaults: a field set (even to null) wins. */
export function effectiveLimits(overrides: TenantLimits | undefined, defaults: EffectiveTenantLimits): EffectiveTenantLimits {
  const out = { ...defaults };
  for (const k of TENANT_LIMIT_NAMES) if (overrides?.[k] !== undefined) out[k] = overrides[k];
  return out;
}

const UNITS: Record<(typeof TENANT_LIMIT_NAMES)[number], string> = { runningSandboxes: 'running sandboxes', memoryMb: 'MB of memory', cpus: 'CPUs', snapshots: 'snapshots', diskMb: 'MB of disk' };

/**
 * Refuses a demand that would take the tenant past one of its limits. Only
 * what the demand adds is checked: a tenant already over a lowered limit
 * keeps what it has and may still do what adds nothing there (a resume adds
 * no disk). The first limit crossed is named in the message and in
 * `details.limit`.
 */
export function checkTenantQuota(tenant: string, used: TenantUsage, demand: TenantUsage, limits: EffectiveTenantLimits): void {
  for (const name of TENANT_LIMIT_NAMES) {
    const max = limits[name];
    if (max === null || demand[name] <= 0) continue;
    if (used[name] + demand[name] > max + 1e-9) {
      throw new ForkdError(
        'RESOURCE_EXHAUSTED',
        `tenant ${tenant} has reached its ${name} limit: ${used[name]} of ${max} ${UNITS[name]} in use, ${demand[name]} more asked for`,
        { limit: name, max, used: used[name], requested: demand[name] },
      );
    }
  }
}
