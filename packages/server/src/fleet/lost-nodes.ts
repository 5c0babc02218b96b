import type { Logger } from '../shared/logger.js';
import type { FleetStore, NodeRecord } from './fleet-store.js';

export interface LostNodeWatchOptions {
  store: FleetStore;
  /** A node silent this long is lost. */
  lostMs: number;
  logger?: Logger | undefined;
  /** Called once per node newly marked lost, with the sandboxes placed on it (restoring them elsewhere is the caller's policy). */
  onLost?: ((node: NodeRecord, sandboxes: string[]) => Promise<void>) | undefined;
  now?: () => number;
}

/**
 * One pass: the nodes silent past the deadline are marked lost (one
 * replica runs it: a leased job, see node-backend.ts), so `onLost` runs
 * once per loss. Returns the nodes it marked.
 */
export async function markLostNodes(o: LostNodeWatchOptions): Promise<string[]> {
  const now = (o.now ?? Date.now)();
  const marked: string[] = [];
  for (const n of await o.store.listNodes()) {
    if (n.state === 'lost' || now - Date.parse(n.lastSeenAt) <= o.lostMs) continue;
    if (!(await o.store.setNodeState(n.id, 'lost'))) continue;
    marked.push(n.id);
    const sandboxes = await o.store.placedOn('sandbox', n.id);
    o.logger?.warn('node lost', { node: n.id, lastSeenAt: n.lastSeenAt, sandboxes: sandboxes.length });
    await o.onLost?.({ ...n, state: 'lost' }, sandboxes).catch((err: unknown) => o.logger?.error('restoring a lost node\'s sandboxes failed', { node: n.id, error: String(err) }));
  }
  return marked;
}
