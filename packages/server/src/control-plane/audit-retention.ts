import type { Logger } from '../shared/logger.js';
import type { ControlStore } from '../store/control-store.js';

/** How often old audit records are deleted: retention is in days, an hour late is fine. */
const PRUNE_EVERY_MS = 60 * 60 * 1000;

/**
 * Deletes audit records older than `days` now and every hour after (0: keep
 * them all). Returns the stop function. The timer is unref'd: retention never
 * keeps a process alive.
 */
export function startAuditRetention(store: ControlStore, days: number, logger?: Logger): () => void {
  if (days <= 0) return () => {};
  const prune = async () => {
    try {
      const n = await store.pruneAudit(new Date(Date.now() - days * 86_400_000).toISOString());
      if (n > 0) logger?.info('audit records past retention deleted', { count: n, retentionDays: days });
    } catch (err) {
      logger?.warn('audit pruning failed', { error: String(err) });
    }
  };
  void prune();
  const timer = setInterval(() => void prune(), PRUNE_EVERY_MS);
  timer.unref();
  return () => clearInterval(timer);
}
