import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_DISK_MB, ForkdError, type EffectiveTenantLimits, type SandboxInfo, type TenantLimits, type TenantUsage } from '@forkd/protocol';
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
  bind(id: string): Promise<void>;
  release(): Promise<void>;
}

/** A reservation outlives a replica that died mid-operation this long at most (longer than any operation's node deadline). */
export const RESERVATION_TTL_MS = 60 * 60_000;
/** How long a check holds its tenant's lease at most (a node listing is bounded by its read deadline, 30 s). */
const CHECK_LEASE_MS = 60_000;
/** How long a check waits for another replica's check of the same tenant before it gives up. */
const CHECK_WAIT_MS = 30_000;

const NOTHING: Reservation = { bind: async () => {}, release: async () => {} };

/**
 * Per-tenant limits and the capacity reserved by operations in flight. The
 * check and its reservation of one tenant run one at a time, in this
 * process (a per-tenant queue) and across control-plane replicas (a lease
 * `quota:<tenant>` in the control store), so two calls of one tenant never
 * both pass for the last slot: the second sees the first's reservation,
 * which is a row of the control store that every replica reads. A
 * reservation lasts until its operation is done (or RESERVATION_TTL_MS, if
 * its replica died), so the slow part (a start, a restore) holds no lock
 * and calls of a tenant run in parallel; only the short check waits its
 * turn. A call that adds nothing limited takes no lock and stores nothing.
 */
export class TenantQuotas {
  readonly #store: ControlStore;
  readonly #defaults: EffectiveTenantLimits;
  /** Who holds a tenant's check lease: this process. */
  readonly #holder = `quota-${randomBytes(6).toString('hex')}`;
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

  /** Holdings plus what operations in flight reserved (on any replica); a sandbox bound to a reservation counts once, by it. */
  async usage(tenant: string, holdings: TenantHoldings): Promise<TenantUsage> {
    const pending = await this.#store.reservations(tenant);
    const bound = new Set(pending.flatMap((p) => p.sandboxIds));
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

  /** One check and its reservation; runs alone among the tenant's, here and on every replica (see admit). */
  async #check(tenant: string, demand: TenantUsage, holdings: () => Promise<TenantHoldings>): Promise<Reservation> {
    const limits = await this.limits(tenant);
    // Nothing limited that this demand adds: no need to list the tenant's holdings, nor to count it for others.
    const limited = (Object.keys(demand) as (keyof TenantUsage)[]).some((k) => demand[k] > 0 && limits[k] !== null);
    if (!limited) return NOTHING;
    const lease = `quota:${tenant}`;
    await this.#takeLease(lease);
    const id = `qr-${randomBytes(9).toString('hex')}`;
    try {
      checkTenantQuota(tenant, await this.usage(tenant, await holdings()), demand, limits);
      await this.#store.putReservation({ id, tenant, demand }, RESERVATION_TTL_MS);
    } finally {
      await this.#store.releaseLease(lease, this.#holder).catch(() => {});
    }
    return {
      bind: (sandboxId) => this.#store.bindReservation(id, sandboxId),
      release: () => this.#store.dropReservation(id),
    };
  }

  /** Waits for another replica's check of the same tenant (a few ms: a listing and a row), then takes the lease. */
  async #takeLease(name: string): Promise<void> {
    const until = Date.now() + CHECK_WAIT_MS;
    for (let delay = 2; !(await this.#store.tryLease(name, this.#holder, CHECK_LEASE_MS)); delay = Math.min(delay * 2, 50)) {
      if (Date.now() > until) throw new ForkdError('UNAVAILABLE', 'the quota check of this tenant is busy on another control-plane replica; try again');
      await sleep(delay);
    }
  }
}
