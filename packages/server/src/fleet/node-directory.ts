import { ForkdError } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { NodeRecord } from './fleet-store.js';

/** A node's contract as the control plane holds it: closed when the node goes or its address changes. */
export type NodeClient = NodeService & { close(): void };

/**
 * The nodes a control plane can reach: who they are (the fleet store) and
 * a contract client for each. The fleet router asks it; registration,
 * Kubernetes discovery and a static `--node` list are ways to fill it.
 */
export interface NodeDirectory {
  /** Nodes that may take work now: active and heard from within the deadline. */
  live(): Promise<NodeRecord[]>;
  /** Every node the fleet knows, any state. */
  all(): Promise<NodeRecord[]>;
  /** The contract of a node; UNAVAILABLE when it is unknown, lost or silent past the deadline. */
  client(nodeId: string): Promise<NodeService>;
  /** The contract of a node heard from within the deadline, lost or not (a lost node that came back is reconciled through it); UNAVAILABLE otherwise. */
  reach(nodeId: string): Promise<NodeService>;
  /** Memory this control plane placed on each node since that node's last heartbeat (see chooseNode). */
  placedSince(): ReadonlyMap<string, number>;
  /** Counts a placement until the node's next heartbeat. */
  notePlaced(nodeId: string, memoryBytes: number): void;
}

/** Whether a node is fit for work at `now`: active and heard from within `deadlineMs`. */
export function isLive(n: NodeRecord, now: number, deadlineMs: number): boolean {
  return n.state === 'active' && now - Date.parse(n.lastSeenAt) <= deadlineMs;
}

export function nodeUnavailable(nodeId: string, why: string): ForkdError {
  return new ForkdError('UNAVAILABLE', `node ${nodeId} ${why}; try again later`, { node: nodeId });
}
