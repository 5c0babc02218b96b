import type { Logger } from '../shared/logger.js';
import type { FleetService } from './fleet-service.js';

export interface ExportLoopOptions {
  fleet: FleetService;
  /** This replica's name in leases. */
  holder: string;
  everyMs: number;
  logger?: Logger | undefined;
}

const LEASE = 'fleet:exports';

/**
 * One pass: every running sandbox of every live node whose newest snapshot
 * is not in the blob store yet gets it exported (incremental: the chunks
 * the store holds are not sent again), so a lost node's sandboxes can be
 * restored elsewhere from at most one interval (plus the timeline's) ago.
 * One replica at a time (the lease). Returns how many it exported.
 */
export async function exportPass(o: ExportLoopOptions): Promise<number> {
  const { fleet } = o;
  if (!(await fleet.store.tryLease(LEASE, o.holder, o.everyMs * 3))) return 0;
  let n = 0;
  for (const node of await fleet.directory.live()) {
    const svc = await fleet.directory.client(node.id);
    for (const s of (await svc.list()).filter((x) => x.state === 'running')) {
      try {
        const newest = (await svc.timeline(s.id)).sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1))[0];
        if (!newest || (await fleet.store.exportOf(newest.id))) continue;
        const exp = await svc.exportSnapshot(newest.id);
        await fleet.store.recordExport({ snapshotId: newest.id, sandboxId: s.id, manifest: exp.manifest, node: node.id, exportedAt: newest.createdAt });
        n++;
      } catch (err) {
        o.logger?.warn('export of a snapshot failed', { sandbox: s.id, node: node.id, error: String(err) });
      }
    }
  }
  return n;
}

/** exportPass every `everyMs` until stopped (no pass starts while one runs). */
export function startExportLoop(o: ExportLoopOptions): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    void exportPass(o)
      .catch((err: unknown) => o.logger?.warn('export pass failed', { error: String(err) }))
      .finally(() => (running = false));
  }, o.everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
