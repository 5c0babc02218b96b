import type { Logger } from '../shared/logger.js';
import type { FleetService } from './fleet-service.js';
import { newestFirst } from './newest-first.js';

export interface ExportPassOptions {
  fleet: FleetService;
  logger?: Logger | undefined;
}

/**
 * One pass: every running sandbox of every live node whose newest snapshot
 * is not in the blob store yet gets it exported (incremental: the chunks
 * the store holds are not sent again), so a lost node's sandboxes can be
 * restored elsewhere from at most one interval (plus the timeline's) ago.
 * One replica runs it (a leased job, see node-backend.ts). Returns how many
 * it exported.
 */
export async function exportPass(o: ExportPassOptions): Promise<number> {
  const { fleet } = o;
  let n = 0;
  for (const node of await fleet.directory.live()) {
    const svc = await fleet.directory.client(node.id);
    for (const s of (await svc.list()).filter((x) => x.state === 'running')) {
      try {
        const newest = newestFirst(await svc.timeline(s.id))[0];
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
