import type { NodeService } from '../node-contract/node-service.js';
import type { SecretCipher } from '../control-plane/secrets/secret-cipher.js';
import type { Logger } from '../shared/logger.js';
import type { NodeCallTimeouts } from '../node-http/call-deadline.js';
import type { FleetStore } from './fleet-store.js';
import { FleetService } from './fleet-service.js';
import { fleetNode } from './fleet-node.js';
import { FleetCounters } from './fleet-counters.js';
import { RegisteredNodes, type RegisteredNodesOptions } from './registered-nodes.js';

/** A control plane's fleet: the nodes that joined it and the node contract routed over them. */
export interface Fleet {
  nodes: RegisteredNodes;
  service: FleetService;
  /** What the API, E2B and MCP are served from instead of one node. */
  node: NodeService;
  /** The secret a node presents to join (join.token). */
  joinToken: string;
  /** What this replica's fleet jobs did (returned nodes), for /metrics. */
  counters: FleetCounters;
  close(): void;
}

export interface FleetOptions {
  store: FleetStore;
  cipher: SecretCipher;
  joinToken: string;
  /** A node silent this long takes no new work. */
  deadlineMs: number;
  logger?: Logger | undefined;
  connect?: RegisteredNodesOptions['connect'];
  /** How long calls to a node wait for it (FORKD_NODE_CALL_TIMEOUT_S). */
  callTimeouts?: NodeCallTimeouts | undefined;
}

export function openFleet(o: FleetOptions): Fleet {
  const nodes = new RegisteredNodes({ store: o.store, cipher: o.cipher, deadlineMs: o.deadlineMs, connect: o.connect, callTimeouts: o.callTimeouts });
  const service = new FleetService(o.store, nodes, o.logger);
  return { nodes, service, node: fleetNode(service), joinToken: o.joinToken, counters: new FleetCounters(), close: () => nodes.close() };
}
