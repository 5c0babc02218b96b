import { handlerFaults } from '../../shared/connection-guard.js';
import type { NodeStats } from '../../node-contract/node-types.js';
import type { ManagerContext } from './manager-context.js';
import type { ManagerDeps } from './manager-deps.js';

const MiB = 1024 * 1024;

/** The node's numbers: pool, snapshots, and the room its admission has left (what a fleet places by). */
export async function nodeStats(ctx: ManagerContext, d: Pick<ManagerDeps, 'storage' | 'store'>): Promise<NodeStats> {
  const pool = await d.storage.usage();
  const totals = await d.store.snapshotTotals();
  const room = await ctx.admission.room();
  const count = (state: string) => room.records.filter((r) => r.state === state).length;
  return {
    snapshots: totals.count,
    snapshotBytes: totals.bytes,
    poolUsedBytes: pool.usedBytes,
    poolSizeBytes: pool.sizeBytes,
    warmPoolHeld: ctx.pool.held().size,
    hotPaused: ctx.hot.ids().size,
    // Whole bytes: an overcommit like 1.5 makes a fractional cap, and a fleet's heartbeat takes integers.
    memoryCapBytes: Math.floor(room.memoryCapMb * MiB),
    memoryCommittedBytes: room.committed.memoryMb * MiB,
    cpus: room.cpus,
    running: count('running'),
    paused: count('paused'),
    handlerFaults: handlerFaults.snapshot(),
  };
}
