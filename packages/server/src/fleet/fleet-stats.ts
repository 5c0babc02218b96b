import type { NodeStats } from '../node-contract/node-types.js';

/** The fleet's numbers: every node's added up (handler faults per component too). */
export function sumStats(all: readonly NodeStats[]): NodeStats {
  const out: NodeStats = { snapshots: 0, snapshotBytes: 0, poolUsedBytes: 0, poolSizeBytes: 0, warmPoolHeld: 0, hotPaused: 0, handlerFaults: {} };
  for (const s of all) {
    out.snapshots += s.snapshots;
    out.snapshotBytes += s.snapshotBytes;
    out.poolUsedBytes += s.poolUsedBytes;
    out.poolSizeBytes += s.poolSizeBytes;
    out.warmPoolHeld += s.warmPoolHeld;
    out.hotPaused = (out.hotPaused ?? 0) + (s.hotPaused ?? 0);
    for (const [k, v] of Object.entries(s.handlerFaults ?? {})) out.handlerFaults![k] = (out.handlerFaults![k] ?? 0) + v;
  }
  return out;
}
