import { ForkdError, type Limits } from '@forkd/protocol';
import type { HostCapacity } from './host-capacity.js';

/** How far the limits of running sandboxes may add up beyond the host (idle sandboxes use a fraction of their limit). */
export interface OvercommitPolicy {
  /** × the host's memory (FORKD_MEMORY_OVERCOMMIT). */
  memory: number;
  /** × the host's CPUs (FORKD_CPU_OVERCOMMIT); 0: not checked. */
  cpus: number;
}

export interface Committed {
  memoryMb: number;
  cpus: number;
}

export const NOTHING: Committed = { memoryMb: 0, cpus: 0 };

/** States whose sandbox has, or is getting, processes on this host. */
export const COMMITTING_STATES: ReadonlySet<string> = new Set(['creating', 'running']);

export function commitOf(limits: Pick<Limits, 'memoryMb' | 'cpus'>, times = 1): Committed {
  return { memoryMb: limits.memoryMb * times, cpus: limits.cpus * times };
}

export function addCommitted(a: Committed, b: Committed): Committed {
  return { memoryMb: a.memoryMb + b.memoryMb, cpus: Math.round((a.cpus + b.cpus) * 1000) / 1000 };
}

/**
 * Whether the host can take `demand` on top of what running sandboxes are
 * allowed: RESOURCE_EXHAUSTED naming the ratio otherwise. Tenants see the
 * limit's name and the operator's knob; the host's numbers (details
 * `hostMb`, `committedMb`…) are for admin keys only (public-error.ts).
 */
export function checkAdmission(committed: Committed, demand: Committed, host: HostCapacity, policy: OvercommitPolicy): void {
  const memCap = host.memoryMb * policy.memory;
  if (demand.memoryMb > 0 && committed.memoryMb + demand.memoryMb > memCap) {
    throw new ForkdError(
      'RESOURCE_EXHAUSTED',
      `this node cannot take ${demand.memoryMb} MB more of sandbox memory: running sandboxes' limits would pass ${policy.memory}× the host's memory (FORKD_MEMORY_OVERCOMMIT); try again when sandboxes are paused or deleted`,
      { limit: 'FORKD_MEMORY_OVERCOMMIT', hostMb: host.memoryMb, committedMb: committed.memoryMb, requestedMb: demand.memoryMb },
    );
  }
  const cpuCap = host.cpus * policy.cpus;
  if (policy.cpus > 0 && demand.cpus > 0 && committed.cpus + demand.cpus > cpuCap + 1e-9) {
    throw new ForkdError(
      'RESOURCE_EXHAUSTED',
      `this node cannot take ${demand.cpus} CPUs more: running sandboxes' CPU limits would pass ${policy.cpus}× the host's CPUs (FORKD_CPU_OVERCOMMIT); try again when sandboxes are paused or deleted`,
      { limit: 'FORKD_CPU_OVERCOMMIT', hostCpus: host.cpus, committedCpus: committed.cpus, requestedCpus: demand.cpus },
    );
  }
}

/** What admission reads of a sandbox's record. */
export interface AdmissionRecord {
  id: string;
  state: string;
  limits: Pick<Limits, 'memoryMb' | 'cpus'>;
}

/** A running-to-be sandbox's share, held until the operation making it run is done. */
export interface AdmissionTicket {
  release(): void;
}

/**
 * Node admission: the sum of running sandboxes' limits (from the node's
 * records) plus what operations in flight were admitted for. A ticket names
 * the sandboxes it stands for: their records are left out of the sum while it
 * is held (no double count). The records are read by the caller (the store is
 * async); AdmissionGate (admission-gate.ts) serializes the read, the check
 * and the hold, so two resumes or creates cannot both take the last room.
 */
export class NodeAdmission {
  readonly #host: HostCapacity;
  readonly #policy: OvercommitPolicy;
  readonly #held = new Set<{ ids: ReadonlySet<string>; demand: Committed }>();

  constructor(host: HostCapacity, policy: OvercommitPolicy) {
    this.#host = host;
    this.#policy = policy;
  }

  get host(): HostCapacity {
    return this.#host;
  }

  /** The memory the limits of running sandboxes may add up to (host × overcommit). */
  get capMb(): number {
    return this.#host.memoryMb * this.#policy.memory;
  }

  committed(records: Iterable<AdmissionRecord>): Committed {
    const held = [...this.#held];
    const skip = new Set(held.flatMap((h) => [...h.ids]));
    let c = NOTHING;
    for (const r of records) if (COMMITTING_STATES.has(r.state) && !skip.has(r.id)) c = addCommitted(c, commitOf(r.limits));
    for (const h of held) c = addCommitted(c, h.demand);
    return c;
  }

  /** Checks only (an early refusal before work that would be wasted); `admit` holds. */
  check(demand: Committed, records: Iterable<AdmissionRecord>): void {
    checkAdmission(this.committed(records), demand, this.#host, this.#policy);
  }

  /** Checks and holds `demand` for `ids` until released (their records, once written, are not counted twice meanwhile). */
  admit(demand: Committed, ids: Iterable<string>, records: Iterable<AdmissionRecord>): AdmissionTicket {
    this.check(demand, records);
    const h = { ids: new Set(ids), demand };
    this.#held.add(h);
    return { release: () => void this.#held.delete(h) };
  }
}
