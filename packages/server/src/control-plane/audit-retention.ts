import type { Logger } from '../shared/logger.js';
import type { ControlStore } from '../store/control-store.js';
import { newReplicaId, startLeasedJob } from './leased-job.js';

/** How often old audit records are deleted: retention is in days, an hour late is fine. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;

export interface RetentionSchedule {
  /** This replica's lease holder name (ControlPlane.replicaId). */
  holder: string;
  /** Tests: ticks and lease in milliseconds (default every hour, a lease of three). */
  everyMs?: number;
  ttlMs?: number;
}

/**
 * Deletes audit records older than `days` now and every hour after (0: keep
 * them all), on one control-plane replica at a time (the `audit-retention`
 * lease; a replica that dies leaves it to another after ttlMs). Returns the
 * stop function. The timer is unref'd: retention never keeps a process alive.
 */
export function startAuditRetention(store: ControlStore, days: number, logger?: Logger, schedule?: RetentionSchedule): () => Promise<void> {
  if (days <= 0) return async () => {};
  const { holder = newReplicaId(), everyMs = PRUNE_EVERY_MS, ttlMs = 3 * PRUNE_EVERY_MS } = schedule ?? {};
  const run = async () => {
    const n = await store.pruneAudit(new Date(Date.now() - days * 86_400_000).toISOString());
    if (n > 0) logger?.info('audit records past retention deleted', { count: n, retentionDays: days });
  };
  return startLeasedJob({ leases: store, name: 'audit-retention', holder, everyMs, ttlMs, run, logger });
}
