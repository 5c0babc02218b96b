import { toForkdError, type SandboxInfo } from '@forkd/protocol';
import type { SandboxEvent } from '../control-plane/node-audit.js';
import type { NodeService } from '../node-contract/node-service.js';
import type { Logger } from '../shared/logger.js';
import type { FleetCounters, ReturnOutcome } from './fleet-counters.js';
import type { FleetService } from './fleet-service.js';
import { DELETED_UNDER, type NodeRecord } from './fleet-store.js';
import { moveTimeline } from './migrate.js';
import { newestFirst } from './newest-first.js';

export interface ReturnedNodesOptions {
  fleet: FleetService;
  /** A lost node heard from within this long has come back (FORKD_NODE_DEADLINE_S). */
  deadlineMs: number;
  /** Files what happened to each sandbox in its audit log. */
  file?: ((e: SandboxEvent) => void) | undefined;
  counters?: FleetCounters | undefined;
  logger?: Logger | undefined;
  now?: () => number;
}

/**
 * One pass: every lost node that heartbeats again is reconciled, then made
 * active. Its sandboxes were marked lost with it and some were restored on
 * another node from their last export; the node, restarted on its pool,
 * brings its own copies back (crash recovery). Two copies of one id must
 * not both run nor both be served: for a sandbox placed elsewhere now, the
 * copy here is stale and is settled (settleStaleCopy); one still placed
 * here was never restored and is the node's again. Until the pass is done
 * the node stays lost, so nothing of it is served. One replica runs it (the
 * lost-nodes lease, see node-backend.ts); it is idempotent, so a pass cut
 * short is finished by the next. Returns the nodes it made active.
 */
export async function reconcileReturnedNodes(o: ReturnedNodesOptions): Promise<string[]> {
  const now = (o.now ?? Date.now)();
  const back: string[] = [];
  for (const n of await o.fleet.store.listNodes()) {
    if (n.state !== 'lost' || now - Date.parse(n.lastSeenAt) > o.deadlineMs) continue;
    try {
      await reconcileNode(o, n);
    } catch (err) {
      // It stays lost (not served) and the next pass tries again.
      o.logger?.warn('a returned node could not be reconciled yet', { node: n.id, error: String(err) });
      continue;
    }
    if (await o.fleet.store.setNodeState(n.id, 'active')) back.push(n.id);
    o.counters?.nodeReturned();
  }
  return back;
}

async function reconcileNode(o: ReturnedNodesOptions, n: NodeRecord): Promise<void> {
  const a = await o.fleet.directory.reach(n.id);
  const held = await a.list();
  const tally: Record<ReturnOutcome, number> = { reclaimed: 0, merged: 0, kept: 0, discarded: 0 };
  for (const s of held) {
    const placed = await o.fleet.store.placement('sandbox', s.id);
    const deleted = placed === undefined && (await o.fleet.store.placement('deleted', s.id)) !== undefined;
    // Placed here (never restored elsewhere), or unknown to the fleet (made behind its back): the node's own.
    const outcome = deleted
      ? await discardDeleted(o, { node: n.id, svc: a }, s)
      : placed === undefined || placed === n.id
        ? reclaim(o, n, s, placed)
        : await settleStaleCopy(o, { node: n.id, svc: a }, s, placed);
    tally[outcome]++;
    o.counters?.sandbox(outcome);
  }
  o.logger?.warn('a lost node came back', { node: n.id, sandboxes: held.length, ...tally });
}

function reclaim(o: ReturnedNodesOptions, n: NodeRecord, s: SandboxInfo, placed: string | undefined): ReturnOutcome {
  if (placed !== undefined) event(o, s.id, 'OK', `node ${n.id} came back: this sandbox (never restored elsewhere) is served from it again, ${s.state}`);
  return 'reclaimed';
}

/**
 * The copy on the returned node (`a`) of a sandbox that now lives on
 * another node: paused (it must not run on), then every snapshot of its
 * timeline that the sandbox's node lacks is imported there as an ordinary
 * snapshot of that sandbox (newest first: the pause's, what it ran to),
 * which the user can fork or rewind to; then the copy is deleted. Anything
 * failing leaves the copy paused where it is (logged and filed), never lost.
 */
async function settleStaleCopy(o: ReturnedNodesOptions, a: { node: string; svc: NodeService }, s: SandboxInfo, to: string): Promise<ReturnOutcome> {
  const { fleet, logger } = o;
  let paused = s.state !== 'running';
  try {
    if (!paused) await a.svc.pause(s.id);
    paused = true;
    const b = await fleet.directory.client(to);
    const there = new Set((await b.timeline(s.id)).map((x) => x.id));
    const missing = newestFirst(await a.svc.timeline(s.id)).filter((x) => !there.has(x.id));
    const { failed } = await moveTimeline(fleet, a.svc, b, to, missing, logger);
    if (failed.length > 0) throw new Error(`${failed.length} of its ${missing.length} snapshots did not reach ${to} (${failed.join(', ')})`);
    await a.svc.delete(s.id);
    const newest = missing[0] ? `, newest ${missing[0].id}` : '';
    event(o, s.id, 'OK', `node ${a.node} came back with a stale copy of this sandbox (restored on ${to} while it was lost): ${missing.length} of its snapshots joined this timeline${newest}; the copy was deleted`);
    logger?.info('a stale copy merged into its sandbox', { sandbox: s.id, from: a.node, to, snapshots: missing.length });
    return 'merged';
  } catch (err) {
    const e = toForkdError(err);
    logger?.error('a stale copy could not be merged: kept on its node', { sandbox: s.id, node: a.node, placedOn: to, paused, error: e.message });
    event(o, s.id, e.code, `node ${a.node} came back with a stale copy of this sandbox (restored on ${to} while it was lost); merging it failed (${e.message}): it is kept on ${a.node}, ${paused ? 'paused' : 'its pause failed too'}`);
    return 'kept';
  }
}

/**
 * The copy of a sandbox that was restored elsewhere and then deleted there
 * by its owner while this node was lost: the owner's delete reaches it too.
 * A failing delete keeps it (paused when possible) for the next pass.
 */
async function discardDeleted(o: ReturnedNodesOptions, a: { node: string; svc: NodeService }, s: SandboxInfo): Promise<ReturnOutcome> {
  try {
    await a.svc.delete(s.id);
    await o.fleet.store.unplace('deleted', s.id);
    event(o, s.id, 'OK', `node ${a.node} came back with a copy of this sandbox, which was deleted while the node was lost: the copy was deleted too`);
    return 'discarded';
  } catch (err) {
    const e = toForkdError(err);
    if (s.state === 'running') await a.svc.pause(s.id).catch(() => {});
    o.logger?.error('a copy of a deleted sandbox could not be deleted: kept on its node', { sandbox: s.id, node: a.node, error: e.message });
    return 'kept';
  }
}

/** Whether some node is lost now: while one is, a deleted sandbox leaves a tombstone (fleet-node.ts). */
export async function someNodeLost(store: FleetService['store']): Promise<boolean> {
  return (await store.listNodes()).some((n) => n.state === 'lost');
}

/** Tombstones matter only while a node is lost: with none lost, they go. */
export async function clearTombstones(fleet: FleetService): Promise<void> {
  if (await someNodeLost(fleet.store)) return;
  for (const id of await fleet.store.placedOn('deleted', DELETED_UNDER)) await fleet.store.unplace('deleted', id);
}

function event(o: ReturnedNodesOptions, sandboxId: string, code: SandboxEvent['code'], detail: string): void {
  o.file?.({ at: new Date().toISOString(), sandboxId, operation: 'recover', detail, code, durationMs: 0 });
}
