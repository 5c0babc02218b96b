import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { FleetStore } from '../fleet/fleet-store.js';
import type { Logger } from '../shared/logger.js';

/** This control-plane process among the replicas sharing a store: how leases name their holder. */
export function newReplicaId(): string {
  return `${hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
}

export interface LeasedJobOptions {
  leases: Pick<FleetStore, 'tryLease' | 'releaseLease'>;
  /** The lease's name: one per kind of work. */
  name: string;
  holder: string;
  everyMs: number;
  /**
   * How long the lease outlives a tick (more than everyMs, so its holder
   * renews it before it lapses): how long the work waits for another
   * replica when its holder dies without releasing it.
   */
  ttlMs: number;
  run: () => Promise<void>;
  logger?: Logger | undefined;
}

/**
 * Work that must happen once across control-plane replicas: every replica
 * ticks (at start, then every `everyMs`), and only the lease's holder runs
 * it. A run longer than the lease's TTL (a lost node's restore, a returned
 * node's reconciliation) renews it every `everyMs` meanwhile, so another
 * replica does not take the same work up half-way. Returns stop, which
 * waits for a running tick and gives the lease up so another replica takes
 * over at its next tick. The timer is unref'd.
 */
export function startLeasedJob(o: LeasedJobOptions): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const tick = async () => {
    try {
      if (stopped || !(await o.leases.tryLease(o.name, o.holder, o.ttlMs))) return;
      const renew = setInterval(() => void o.leases.tryLease(o.name, o.holder, o.ttlMs).catch(() => undefined), o.everyMs);
      try {
        await o.run();
      } finally {
        clearInterval(renew);
      }
    } catch (err) {
      o.logger?.warn('leased job failed', { job: o.name, error: String(err) });
    }
  };
  let busy = false;
  const next = () => {
    // One tick at a time: a run slower than everyMs is neither overlapped nor queued behind (ticks would pile up).
    if (busy) return;
    busy = true;
    running = running.then(tick).finally(() => (busy = false));
  };
  // The first tick starts now (synchronously up to the lease's query), not at the next turn.
  running = tick();
  const timer = setInterval(next, o.everyMs);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
    await o.leases.releaseLease(o.name, o.holder).catch(() => undefined);
  };
}
