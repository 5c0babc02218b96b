import { readFile } from 'node:fs/promises';
import { ForkdError } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import { NodeHttpClient } from '../node-http/node-http-client.js';
import type { ForkdConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { openFleet, type Fleet } from '../fleet/fleet.js';
import { joinToken } from '../fleet/join-token.js';
import { markLostNodes } from '../fleet/lost-nodes.js';
import { newReplicaId, startLeasedJob } from './leased-job.js';
import type { ControlPlane } from './control-plane.js';
import { auditNodeEvents } from './node-audit.js';
import { restoreLostSandboxes } from '../fleet/restore-lost.js';
import { clearTombstones, reconcileReturnedNodes } from '../fleet/returned-nodes.js';
import { exportPass } from '../fleet/export-loop.js';
import { inClusterApi } from '../fleet/kubernetes-api.js';
import { startKubernetesDiscovery } from '../fleet/kubernetes-nodes.js';

/** What a `--role control-plane` serves its API from: one node at a URL, or a fleet of nodes that joined it. */
export interface NodeBackend {
  svc: NodeService;
  fleet?: Fleet | undefined;
  /** For the start-up line: the node's URL, or `fleet`. */
  describe: string;
  close(): void | Promise<void>;
}

/** `--node URL`: one node, its token from FORKD_NODE_TOKEN_FILE; it must answer now (a wrong token would otherwise reach callers as their own 401). */
export async function oneNode(config: ForkdConfig, url: string): Promise<NodeBackend> {
  const token = (await readFile(config.nodeTokenFile, 'utf8').catch(() => '')).trim();
  if (!token) throw new ForkdError('FAILED_PRECONDITION', `no node token in ${config.nodeTokenFile} (copy the node's <state dir>/node.token there, or set FORKD_NODE_TOKEN_FILE)`);
  const node = new NodeHttpClient({ url, token, timeouts: config.fleet.nodeCallTimeouts });
  await node.templates().catch((err: unknown) => {
    node.close();
    throw new ForkdError('FAILED_PRECONDITION', `the node at ${url} does not answer this control plane: ${(err as Error).message}`, undefined, { cause: err });
  });
  return { svc: node, describe: `the node at ${url}`, close: () => node.close() };
}

/**
 * No `--node`: a fleet. Nodes join with the join token (made at first start
 * in the state dir; every replica needs the same file), records live in the
 * control store (PostgreSQL when several replicas share the fleet), and one
 * replica at a time marks silent nodes lost.
 */
export async function fleetOf(config: ForkdConfig, control: ControlPlane, logger: Logger): Promise<NodeBackend> {
  const fleet = openFleet({ store: control.store, cipher: control.cipher, joinToken: await joinToken(config.stateDir), deadlineMs: config.fleet.deadlineS * 1000, callTimeouts: config.fleet.nodeCallTimeouts, logger });
  const holder = newReplicaId();
  const file = auditNodeEvents(control, logger);
  const onLost = restoreLostSandboxes(fleet.service, file, logger);
  const stopDiscovery = await discoverKubernetesNodes(config, fleet, logger).catch((err: unknown) => {
    fleet.close();
    throw err;
  });
  const lostEvery = Math.min(5000, config.fleet.deadlineS * 1000);
  const jobs = [
    startLeasedJob({ leases: control.store, name: 'fleet:lost-nodes', holder, everyMs: lostEvery, ttlMs: lostEvery * 3, logger, run: async () => {
      await markLostNodes({ store: control.store, lostMs: config.fleet.lostS * 1000, logger, onLost });
      await reconcileReturnedNodes({ fleet: fleet.service, deadlineMs: config.fleet.deadlineS * 1000, file, counters: fleet.counters, logger });
      await clearTombstones(fleet.service);
    } }),
  ];
  const exportEvery = config.fleet.exportIntervalS * 1000;
  if (exportEvery > 0) jobs.push(startLeasedJob({ leases: control.store, name: 'fleet:exports', holder, everyMs: exportEvery, ttlMs: exportEvery * 3, logger, run: async () => void (await exportPass({ fleet: fleet.service, logger })) }));
  return {
    svc: fleet.node,
    fleet,
    describe: config.fleet.kubernetes ? 'the fleet (node pods found through the Kubernetes API)' : 'the fleet (nodes join with <state dir>/join.token)',
    async close() {
      stopDiscovery();
      await Promise.all(jobs.map((stop) => stop()));
      fleet.close();
    },
  };
}

/**
 * FORKD_NODE_DISCOVERY=kubernetes: the node DaemonSet's ready pods are
 * polled into the fleet as if they sent heartbeats (fleet/kubernetes-nodes.ts),
 * with the token every node shares (FORKD_NODE_TOKEN_FILE). Otherwise nothing:
 * nodes join by heartbeat.
 */
async function discoverKubernetesNodes(config: ForkdConfig, fleet: Fleet, logger: Logger): Promise<() => void> {
  const k = config.fleet.kubernetes;
  if (!k) return () => {};
  const token = (await readFile(config.nodeTokenFile, 'utf8').catch(() => '')).trim();
  if (!token) throw new ForkdError('FAILED_PRECONDITION', `FORKD_NODE_DISCOVERY=kubernetes: no node token in ${config.nodeTokenFile} (the token every node pod answers; FORKD_NODE_TOKEN_FILE)`);
  const api = await inClusterApi(process.env, k.serviceAccountDir);
  logger.info('finding nodes through the Kubernetes API', { namespace: api.namespace, selector: k.selector, daemonSet: k.daemonSet });
  const d = startKubernetesDiscovery({ ...k, api, nodes: fleet.nodes, token, connect: (url, t) => new NodeHttpClient({ url, token: t, timeouts: config.fleet.nodeCallTimeouts }), everyMs: config.fleet.heartbeatS * 1000, logger });
  return () => d.stop();
}
