import { createHash } from 'node:crypto';
import type { SecretCipher } from '../control-plane/secrets/secret-cipher.js';
import { NodeHttpClient } from '../node-http/node-http-client.js';
import type { NodeCallTimeouts } from '../node-http/call-deadline.js';
import type { NodeService } from '../node-contract/node-service.js';
import type { FleetStore, NodeCapacity, NodeRecord } from './fleet-store.js';
import { isLive, nodeUnavailable, type NodeClient, type NodeDirectory } from './node-directory.js';

/** What a node says about itself when it registers and at every heartbeat. */
export interface NodeHeartbeat {
  id: string;
  url: string;
  /** The node's own token, for the control plane's calls to `url`. */
  token: string;
  capacity: NodeCapacity;
}

export interface RegisteredNodesOptions {
  store: FleetStore;
  cipher: SecretCipher;
  /** A node not heard from for this long takes no new work (and, past the lost deadline, is lost). */
  deadlineMs: number;
  /** How a client for a node is made (tests: a node in this process). */
  connect?: (url: string, token: string) => NodeClient;
  /** How long the default client's calls wait for the node (FORKD_NODE_CALL_TIMEOUT_S). */
  callTimeouts?: NodeCallTimeouts | undefined;
}

/** The additional data bound into a sealed node token: it opens only as that node's. */
const tokenAad = (nodeId: string) => `node-token:${nodeId}`;

/**
 * The fleet as nodes registered it: records in the fleet store (shared by
 * every control-plane replica), a contract client per node in this process.
 */
export class RegisteredNodes implements NodeDirectory {
  readonly #o: RegisteredNodesOptions;
  readonly #clients = new Map<string, { key: string; client: NodeClient }>();
  readonly #placed = new Map<string, number>();

  constructor(o: RegisteredNodesOptions) {
    this.#o = o;
  }

  /**
   * Records a heartbeat: a known node keeps its state (a drain is the
   * operator's to lift, a lost mark reconciliation's); a new node is active,
   * unless it already holds sandboxes: it may be a lost node that was
   * removed and came back with stale copies, so it starts lost and is
   * served once reconciled (returned-nodes.ts), a few seconds later.
   */
  async heartbeat(hb: NodeHeartbeat, now = new Date()): Promise<NodeRecord> {
    const old = await this.#o.store.node(hb.id);
    const at = now.toISOString();
    const rec: NodeRecord = {
      id: hb.id,
      url: hb.url,
      sealedToken: old && this.#opened(old) === hb.token ? old.sealedToken : this.#o.cipher.seal(hb.token, tokenAad(hb.id)).toString('base64'),
      state: old?.state ?? (hb.capacity.running + hb.capacity.paused > 0 ? 'lost' : 'active'),
      capacity: hb.capacity,
      registeredAt: old?.registeredAt ?? at,
      lastSeenAt: at,
    };
    await this.#o.store.upsertNode(rec);
    this.#placed.delete(hb.id);
    return rec;
  }

  async live(): Promise<NodeRecord[]> {
    const now = Date.now();
    return (await this.#o.store.listNodes()).filter((n) => isLive(n, now, this.#o.deadlineMs));
  }

  all(): Promise<NodeRecord[]> {
    return this.#o.store.listNodes();
  }

  async client(nodeId: string): Promise<NodeService> {
    return this.#clientOf(nodeId, false);
  }

  async reach(nodeId: string): Promise<NodeService> {
    return this.#clientOf(nodeId, true);
  }

  async #clientOf(nodeId: string, evenLost: boolean): Promise<NodeService> {
    const n = await this.#o.store.node(nodeId);
    if (!n) throw nodeUnavailable(nodeId, 'is not in the fleet');
    if (n.state === 'lost' && !evenLost) throw nodeUnavailable(nodeId, 'is lost');
    if (!isLive({ ...n, state: 'active' }, Date.now(), this.#o.deadlineMs)) throw nodeUnavailable(nodeId, 'has not been heard from');
    // Keyed by what the client is made of, not by the sealed bytes (a seal is new each time): a client is
    // replaced only when the node's address or token really changed, never under calls in flight.
    const token = this.#opened(n);
    if (token === undefined) throw nodeUnavailable(nodeId, 'has a token this control plane cannot open (is secrets.key the same on every replica?)');
    const key = `${n.url}\n${createHash('sha256').update(token).digest('hex')}`;
    const held = this.#clients.get(nodeId);
    if (held?.key === key) return held.client;
    held?.client.close();
    const client = (this.#o.connect ?? ((url, t) => new NodeHttpClient({ url, token: t, timeouts: this.#o.callTimeouts })))(n.url, token);
    this.#clients.set(nodeId, { key, client });
    return client;
  }

  /** A node silent this long takes no new work. */
  get deadlineMs(): number {
    return this.#o.deadlineMs;
  }

  #opened(n: NodeRecord): string | undefined {
    try {
      return this.#o.cipher.open(Buffer.from(n.sealedToken, 'base64'), tokenAad(n.id));
    } catch {
      return undefined;
    }
  }

  placedSince(): ReadonlyMap<string, number> {
    return this.#placed;
  }

  notePlaced(nodeId: string, memoryBytes: number): void {
    this.#placed.set(nodeId, (this.#placed.get(nodeId) ?? 0) + memoryBytes);
  }

  close(): void {
    for (const { client } of this.#clients.values()) client.close();
    this.#clients.clear();
  }
}
