import type { NodeCapacity, NodeState } from '@forkd/protocol';

export type { NodeCapacity, NodeState } from '@forkd/protocol';

/**
 * What a control plane keeps about its fleet, beside the ControlStore's
 * tenants and keys, in the same database (SQLite embedded, PostgreSQL when
 * `FORKD_DATABASE_URL` is set) so every control-plane replica sees one fleet.
 */
export interface FleetStore {
  /** Adds or replaces a node's record (registration and every heartbeat). */
  upsertNode(rec: NodeRecord): Promise<void>;
  node(id: string): Promise<NodeRecord | undefined>;
  /** Every node, by id. */
  listNodes(): Promise<NodeRecord[]>;
  /** Returns false for an unknown node. */
  setNodeState(id: string, state: NodeState): Promise<boolean>;
  /** Forgets the node (its placements stay: they name a node that is gone). */
  removeNode(id: string): Promise<void>;

  /** Records (or moves) where an object lives. */
  place(kind: PlacedKind, id: string, node: string): Promise<void>;
  /** The node holding it, or undefined. */
  placement(kind: PlacedKind, id: string): Promise<string | undefined>;
  /** Every id of a kind on a node, sorted. */
  placedOn(kind: PlacedKind, node: string): Promise<string[]>;
  unplace(kind: PlacedKind, id: string): Promise<void>;

  /** Records that a snapshot is in the blob store under `manifest` (export), with its sandbox. */
  recordExport(rec: ExportRecord): Promise<void>;
  /** The newest export of a sandbox's snapshots (by `exportedAt`), or undefined. */
  latestExport(sandboxId: string): Promise<ExportRecord | undefined>;
  exportOf(snapshotId: string): Promise<ExportRecord | undefined>;

  /**
   * A lease for work that must happen once across replicas (timeline
   * thinning, lifetimes, lost-node handling): true when `holder` holds
   * `name` until now + ttlMs (taken, or renewed by the same holder), false
   * while another holder's lease has not expired. Expiry is judged by the
   * database's clock, not the caller's.
   */
  tryLease(name: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives it up early (a no-op unless `holder` holds it). */
  releaseLease(name: string, holder: string): Promise<void>;
}

/**
 * `deleted`: a sandbox deleted while some node was lost, under the node
 * `*` (a tombstone): that node may come back holding a stale copy, which
 * must then go too (returned-nodes.ts); cleared once no node is lost.
 */
export type PlacedKind = 'sandbox' | 'snapshot' | 'template' | 'deleted';

/** The node every tombstone (PlacedKind `deleted`) is placed under. */
export const DELETED_UNDER = '*';

export interface NodeRecord {
  id: string;
  /** Where the control plane reaches the node's contract (http:// or https://). */
  url: string;
  /** The node's own token for that URL, sealed by the control plane's SecretCipher (base64). */
  sealedToken: string;
  state: NodeState;
  capacity: NodeCapacity;
  /** ISO times. */
  registeredAt: string;
  lastSeenAt: string;
}

export interface ExportRecord {
  snapshotId: string;
  sandboxId: string;
  /** The blob-store key of the snapshot's manifest. */
  manifest: string;
  /** The node it was exported from. */
  node: string;
  exportedAt: string;
}
