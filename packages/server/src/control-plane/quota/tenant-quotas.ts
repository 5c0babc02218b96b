import { DEFAULT_DISK_MB, type EffectiveTenantLimits, type SandboxInfo, type TenantLimits, type TenantUsage } from '@forkd/protocol';
import type { ControlStore } from '../../store/control-store.js';
import { addUsage, checkTenantQuota, effectiveLimits, NO_USAGE, sandboxUsage, UNLIMITED } from './tenant-usage.js';

/** What a tenant holds on the nodes now (its sandboxes as listed, its snapshots counted). */
export interface TenantHoldings {
  sandboxes: readonly Pick<SandboxInfo, 'id' | 'state' | 'limits'>[];
  snapshots: number;
}

/** Capacity taken for an operation in flight, until it is done. */
export interface Reservation {
  /** A sandbox the operation made: from now on it is counted by the reservation, not by its record (no double count). */
  bind(id: string): void;
  release(): void;
}

interface Pending {
  demand: TenantUsage;
  ids: Set<string>;
}

/**
 * Per-tenant limits and the capacity reserved by operations in flight. The
 * check and its reservation of one tenant run one at a time (a per-tenant
 * queue: reading the usage is async now), so two calls of one tenant never
 * both pass for the last slot: the second sees the first's reservation. A
 * reservation lasts until its operation is done, so the slow part (a start,
 * a restore) holds no lock and calls of a tenant run in parallel; only the
 * short check waits its turn. With a control plane scaled out this becomes
 * a row lock.
 */
export class TenantQuotas {
  readonly #store: ControlStore;
  readonly #defaults: EffectiveTenantLimits;
  readonly #pending = new Map<string, Set<Pending>>();
  /** The last check of each tenant in the queue (see admit). */
  readonly #checks = new Map<string, Promise<unknown>>();
  /** The disk quota a create that names none gets on the node (FORKD_DEFAULT_DISK_MB): what it is counted with. */
  readonly defaultDiskMb: number;

  constructor(store: ControlStore, defaults: EffectiveTenantLimits = UNLIMITED, defaultDiskMb = DEFAULT_DISK_MB) {
    this.#store = store;
    this.#defaults = defaults;
    this.defaultDiskMb = defaultDiskMb;
  }

  get defaults(): EffectiveTenantLimits {
    return this.#defaults;
  }

  async overrides(tenant: string): Promise<TenantLimits> {
    return (await this.#store.tenantLimits(tenant)) ?? {};
  }

  async setOverrides(tenant: string, limits: TenantLimits): Promise<void> {
    await this.#store.setTenantLimits(tenant, limits);
  }

  async limits(tenant: string): Promise<EffectiveTenantLimits> {
    return effectiveLimits(await this.#store.tenantLimits(tenant), this.#defaults);
  }

  /** Holdings plus what operations in flight reserved; a sandbox bound to a reservation counts once, by it. */
  usage(tenant: string, holdings: TenantHoldings): TenantUsage {
    const pending = [...(this.#pending.get(tenant) ?? [])];
    const bound = new Set(pending.flatMap((p) => [...p.ids]));
    let u: TenantUsage = { ...NO_USAGE, snapshots: holdings.snapshots };
    for (const s of holdings.sandboxes) if (!bound.has(s.id)) u = addUsage(u, sandboxUsage(s));
    for (const p of pending) u = addUsage(u, p.demand);
    return u;
  }

  /** Rejects with RESOURCE_EXHAUSTED naming the limit, or reserves `demand` until the reservation is released. */
  admit(tenant: string, demand: TenantUsage, holdings: () => Promise<TenantHoldings>): Promise<Reservation> {
    // Queued behind the tenant's earlier checks, whatever they ended in.
    const prior = this.#checks.get(tenant) ?? Promise.resolve();
    const check = prior.then(
      () => this.#check(tenant, demand, holdings),
      () => this.#check(tenant, demand, holdings),
    );
    const settled = check.catch(() => {});
    this.#checks.set(tenant, settled);
    void settled.then(() => {
      if (this.#checks.get(tenant) === settled) this.#checks.delete(tenant);
    });
    return check;
  }

  /** One check and its reservation; runs alone among the tenant's (see admit). */
  async #check(tenant: string, demand: TenantUsage, holdings: () => Promise<TenantHoldings>): Promise<Reservation> {
    const limits = await this.limits(tenant);
    // Nothing limited that this demand adds: no need to list the tenant's holdings.
    const limited = (Object.keys(demand) as (keyof TenantUsage)[]).some((k) => demand[k] > 0 && limits[k] !== null);
    if (limited) checkTenantQuota(tenant, this.usage(tenant, await holdings()), demand, limits);
    const p: Pending = { demand, ids: new Set() };
    let set = this.#pending.get(tenant);
    if (!set) this.#pending.set(tenant, (set = new Set()));
    set.add(p);
    return {
      bind: (id) => void p.ids.add(id),
      release: () => {
        set.delete(p);
        if (set.size === 0 && this.#pending.get(tenant) === set) this.#pending.delete(tenant);
      },
    };
  }
}
