import type { SandboxEvent } from '../control-plane/node-audit.js';
import type { Logger } from '../shared/logger.js';
import type { FleetService } from './fleet-service.js';
import type { NodeRecord } from './fleet-store.js';

/**
 * What a control plane does with a lost node's sandboxes: each with an
 * export in the blob store is imported on a surviving node under its id
 * and resumed from it; what happened (and how much time was lost: from the
 * export to the node's last heartbeat) goes to its event log, as a single
 * node's crash recovery reports it. A sandbox with no export stays placed
 * on the lost node (UNAVAILABLE) until that node comes back or is removed.
 */
export function restoreLostSandboxes(fleet: FleetService, file: (e: SandboxEvent) => void, logger?: Logger) {
  return async (node: NodeRecord, sandboxes: string[]): Promise<void> => {
    for (const id of sandboxes) {
      const t0 = performance.now();
      const at = () => new Date().toISOString();
      const exp = await fleet.store.latestExport(id);
      if (!exp) {
        file({ at: at(), sandboxId: id, operation: 'lost', detail: `node ${node.id} was lost and no snapshot of this sandbox was exported: it stays unavailable`, code: 'UNAVAILABLE', durationMs: 0 });
        continue;
      }
      const lostS = Math.max(0, Math.round((Date.parse(node.lastSeenAt) - Date.parse(exp.exportedAt)) / 1000));
      try {
        const target = await fleet.choose({ memoryBytes: 0, avoid: new Set([node.id]) });
        await target.svc.importSnapshot(exp.manifest, { asSandbox: true });
        await fleet.store.place('sandbox', id, target.node);
        await target.svc.resume(id);
        file({ at: at(), sandboxId: id, operation: 'recover', detail: `node ${node.id} was lost; restored on ${target.node} from snapshot ${exp.snapshotId} (exported ${exp.exportedAt}): up to ${lostS} s of work lost`, code: 'OK', durationMs: Math.round(performance.now() - t0) });
      } catch (err) {
        logger?.warn('restoring a lost sandbox failed', { sandbox: id, node: node.id, error: String(err) });
        file({ at: at(), sandboxId: id, operation: 'recover', detail: `node ${node.id} was lost; restoring from snapshot ${exp.snapshotId} failed`, code: 'UNAVAILABLE', durationMs: Math.round(performance.now() - t0) });
      }
    }
  };
}
