import type { NodeRecord } from './fleet-store.js';

/** What a new sandbox (or a moved one) needs from the node it lands on. */
export interface PlacementNeed {
  memoryBytes: number;
  /** The template it starts from: nodes holding it are preferred (no import first). */
  template?: string | undefined;
  /** The node holding its source (snapshot, sandbox): chosen unless it cannot take it. */
  near?: string | undefined;
  /** Nodes not to choose (e.g. the one being drained). */
  avoid?: ReadonlySet<string> | undefined;
  /** When set, only these nodes (a create first looks among the nodes holding its template: no copy). */
  only?: ReadonlySet<string> | undefined;
}

/** Bytes a node must keep free in its pool to be given more work. */
export const MIN_POOL_FREE_BYTES = 256 * 1024 * 1024;

/** Whether `n` can take `need` by its last heartbeat (less what this control plane placed there since). */
export function hasRoom(n: NodeRecord, need: PlacementNeed, placedSince = 0): boolean {
  return n.state === 'active' && !need.avoid?.has(n.id) && (!need.only || need.only.has(n.id)) && n.capacity.memoryFreeBytes - placedSince >= need.memoryBytes && n.capacity.poolFreeBytes >= MIN_POOL_FREE_BYTES;
}

/**
 * The node a sandbox goes to: the one holding its source when that one has
 * room (locality: no copy), else among those with room the ones holding its
 * template, then the most free memory, then the fewest running sandboxes,
 * then the id (so the choice is deterministic). Undefined: no node can take
 * it. `placedSince` is memory this control plane placed per node since that
 * node's last heartbeat, so a burst of creates spreads instead of piling
 * onto the node that looked emptiest.
 */
export function chooseNode(nodes: readonly NodeRecord[], need: PlacementNeed, placedSince: ReadonlyMap<string, number> = new Map()): NodeRecord | undefined {
  const room = (n: NodeRecord) => hasRoom(n, need, placedSince.get(n.id) ?? 0);
  const near = need.near === undefined ? undefined : nodes.find((n) => n.id === need.near);
  if (near && room(near)) return near;
  const free = (n: NodeRecord) => n.capacity.memoryFreeBytes - (placedSince.get(n.id) ?? 0);
  const has = (n: NodeRecord) => (need.template !== undefined && n.capacity.templates.includes(need.template) ? 1 : 0);
  return nodes
    .filter(room)
    .sort((a, b) => has(b) - has(a) || free(b) - free(a) || a.capacity.running - b.capacity.running || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))[0];
}
