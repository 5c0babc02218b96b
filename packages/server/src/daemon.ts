import type { ForkdConfig } from './shared/config.js';
import type { Logger } from './shared/logger.js';
import type { RunningServer } from './control-plane/http/server.js';
import { openNode, type Node } from './node/node.js';
import { openBlobStore } from './blob/blob-store-config.js';
import { openControlPlane, type ControlPlane } from './control-plane/control-plane.js';
import { installSetupOnlyPackages, setupHost, type Progress } from './setup/setup.js';
import { SETUP_STEPS } from './setup/setup-steps.js';
import { auditNodeEvents } from './control-plane/node-audit.js';
import { privateDir, usePrivateUmask } from './shared/private-state.js';
import type { NodeEventSink } from './node/node-event.js';
import { listenNode, type RunningNodeServer } from './node-http/node-http-server.js';
import { nodeToken } from './node-http/node-token.js';
import { fleetOf, oneNode, type NodeBackend } from './control-plane/node-backend.js';
import { readFile } from 'node:fs/promises';
import { ForkdError } from '@forkd/protocol';
import { apiTlsFiles } from './shared/tls-config.js';
import type { E2bServers } from './control-plane/e2b/e2b-servers.js';
import { startPublicServers, type PublicServers } from './control-plane/public-servers.js';
import type { McpEndpoint } from './control-plane/http/mcp-endpoint.js';
import { startHeartbeats } from './fleet/node-heartbeat.js';
import type { NodeService } from './node-contract/node-service.js';

/** What the API serves beyond forkd's own routes, handed in by whoever starts it (the CLI). */
export interface ApiExtras {
  /** Streamable-HTTP MCP at `/mcp` (see McpEndpoint). */
  mcp?: McpEndpoint;
}

/** Host set-up plus the pool, the `base` template in it and the admin key. Idempotent; seconds when done. */
export async function setup(config: ForkdConfig, logger: Logger, progress: Progress): Promise<Node> {
  // Before the node: a running daemon stops set-up there (NODE_IN_USE), and these are still wanted. Not root: setupHost says so.
  if (process.getuid?.() === 0) await installSetupOnlyPackages(progress);
  const { node, control } = await setupWithControl(config, logger, progress);
  await control.close();
  return node;
}

/**
 * Set-up with the control plane open first: opening the node recovers lost
 * sandboxes, and what that did goes to their event logs (the audit log).
 */
async function setupWithControl(config: ForkdConfig, logger: Logger, progress: Progress): Promise<{ node: Node; control: ControlPlane }> {
  // Before anything is made: every file of forkd's and of the tools it runs is owner-only (shared/private-state.ts).
  usePrivateUmask();
  const host = await setupHost(config, progress);
  await privateDir(config.stateDir);
  const control = await openControlPlane(config, logger);
  const node = await openSetUpNode(config, logger, progress, host.baseRootfs, auditNodeEvents(control));
  return { node, control };
}

/** The pool opened (lost sandboxes recovered, their events to `onEvent`) and the `base` template in it. */
async function openSetUpNode(config: ForkdConfig, logger: Logger, progress: Progress, baseRootfs: string, onEvent: NodeEventSink): Promise<Node> {
  progress({ step: SETUP_STEPS.pool.name });
  const t0 = Date.now();
  // Where snapshots are exported to (FORKD_BLOB_STORE): a store that cannot open (no credentials) stops the start.
  const blobs = await openBlobStore(config.blobStore);
  logger.info('blob store', { store: blobs.describe() });
  const node = await openNode(config, logger, { onEvent, blobs });
  progress({ step: SETUP_STEPS.pool.name, done: true, ms: Date.now() - t0 });
  if (!(await node.templates.has('base'))) {
    const t1 = Date.now();
    progress({ step: SETUP_STEPS.baseTemplate.name, detail: 'importing into the pool' });
    await node.templates.importDir('base', baseRootfs);
    progress({ step: SETUP_STEPS.baseTemplate.name, done: true, ms: Date.now() - t1 });
  }
  return node;
}

/** What a node does on its own while it serves: the warm pool and the policy (per-sandbox timers and events; node.close stops it). */
async function startNodeLoops(node: Node): Promise<void> {
  node.manager.startWarmPool();
  await node.startPolicy();
}

export interface Daemon {
  node: Node;
  control: ControlPlane;
  server: RunningServer;
  /** The E2B-compatible API and envd gateway (either may be off). */
  e2b: E2bServers;
  /** Sandbox host names over HTTPS (absent: not configured). */
  hosts?: RunningServer | undefined;
  close(): Promise<void>;
}

/**
 * `forkd serve`: set-up when needed, then the API. Sandboxes are not stopped
 * on shutdown: they keep running and the next start re-adopts them.
 */
export async function startDaemon(config: ForkdConfig, logger: Logger, progress: Progress, extras: ApiExtras = {}): Promise<Daemon> {
  const { node, control } = await setupWithControl(config, logger, progress);
  let servers: PublicServers;
  try {
    servers = await startPublicServers({ svc: node.service, control, logger, config, mcp: extras.mcp });
  } catch (err) {
    await node.close();
    await control.close();
    throw err;
  }
  await startNodeLoops(node);
  const { server, e2b, hosts } = servers;
  return {
    node,
    control,
    server,
    e2b,
    hosts,
    async close() {
      await servers.close();
      await node.close();
      await control.close();
    },
  };
}

export interface NodeDaemon {
  node: Node;
  server: RunningNodeServer;
  /** The file holding the token a control plane presents (`authorization: Bearer …`). */
  tokenPath: string;
  close(): Promise<void>;
}

/**
 * `forkd serve --role node`: set-up when needed, then only the node, its
 * contract over HTTP (node-http/node-http-server.ts) for a control plane
 * elsewhere; no tenant keys, no public API. Sandboxes outlive it as with
 * `forkd serve`.
 */
export async function startNodeDaemon(config: ForkdConfig, logger: Logger, progress: Progress): Promise<NodeDaemon> {
  usePrivateUmask();
  const host = await setupHost(config, progress);
  await privateDir(config.stateDir);
  // No control plane here to file them in its audit log: the node's own log keeps them.
  const node = await openSetUpNode(config, logger, progress, host.baseRootfs, (e) => logger.info('sandbox event', { ...e }));
  const token = await nodeToken(config.nodeTokenFile);
  let listening: RunningNodeServer | undefined;
  let membership: { stop(): void } | undefined;
  try {
    listening = await listenNode({ node: node.service, token, logger }, config.host, config.port, await apiTlsFiles(config));
    membership = await joinFleet(config, node.service, listening.url, token, logger);
  } catch (err) {
    await listening?.close();
    await node.close();
    throw err;
  }
  const server = listening;
  await startNodeLoops(node);
  return {
    node,
    server,
    tokenPath: config.nodeTokenFile,
    async close() {
      membership?.stop();
      await server.close();
      await node.close();
    },
  };
}

/** With FORKD_CONTROL_PLANE_URL: heartbeats to it (the join token from FORKD_JOIN_TOKEN_FILE); otherwise nothing. */
async function joinFleet(config: ForkdConfig, svc: NodeService, ownUrl: string, token: string, logger: Logger): Promise<{ stop(): void } | undefined> {
  const { controlPlaneUrls, joinTokenFile, nodeId, advertiseUrl, heartbeatS } = config.fleet;
  if (controlPlaneUrls.length === 0) return undefined;
  const joinToken = (await readFile(joinTokenFile, 'utf8').catch(() => '')).trim();
  if (!joinToken) throw new ForkdError('FAILED_PRECONDITION', `no join token in ${joinTokenFile} (copy the control plane's <state dir>/join.token there, or set FORKD_JOIN_TOKEN_FILE)`);
  const url = advertiseUrl ?? ownUrl;
  logger.info('joining the fleet', { controlPlanes: controlPlaneUrls, node: nodeId, url });
  return startHeartbeats(svc, { controlPlanes: controlPlaneUrls, joinToken, id: nodeId, url, token, everyMs: heartbeatS * 1000, logger });
}

export interface ControlPlaneDaemon {
  control: ControlPlane;
  server: RunningServer;
  /** The E2B-compatible API and envd gateway over the same node (either may be off). */
  e2b: E2bServers;
  /** Sandbox host names over HTTPS (absent: not configured). */
  hosts?: RunningServer | undefined;
  /** What it serves: the node's URL, or the fleet. */
  nodeUrl: string;
  close(): Promise<void>;
}

/**
 * `forkd serve --role control-plane [--node URL]`: only the API (keys,
 * tenants, audit, limits) over a node elsewhere, reached through the node
 * contract over HTTP with the node's token, or without `--node` over the
 * fleet of nodes that joined it (control-plane/node-backend.ts). No set-up of this host: the node
 * owns the sandboxes, their loops (warm pool, policy) and their events
 * (logged by the node).
 */
export async function startControlPlaneDaemon(config: ForkdConfig, logger: Logger, extras: ApiExtras = {}): Promise<ControlPlaneDaemon> {
  usePrivateUmask();
  await privateDir(config.stateDir);
  const control = await openControlPlane(config, logger);
  let backend: NodeBackend | undefined;
  let servers: PublicServers;
  try {
    backend = config.nodeUrl ? await oneNode(config, config.nodeUrl) : await fleetOf(config, control, logger);
    servers = await startPublicServers({ svc: backend.svc, control, logger, config, mcp: extras.mcp, fleet: backend.fleet });
  } catch (err) {
    await backend?.close();
    await control.close();
    throw err;
  }
  const nodes = backend;
  const { server, e2b, hosts } = servers;
  return {
    control,
    server,
    e2b,
    hosts,
    nodeUrl: nodes.describe,
    async close() {
      await servers.close();
      await nodes.close();
      await control.close();
    },
  };
}
