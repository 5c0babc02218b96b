import type { ForkdConfig } from './shared/config.js';
import type { Logger } from './shared/logger.js';
import { listen, type RunningServer } from './control-plane/http/server.js';
import { openNode, type Node } from './node/node.js';
import { openControlPlane, type ControlPlane } from './control-plane/control-plane.js';
import { setupHost, type Progress } from './setup/setup.js';
import { auditNodeEvents } from './control-plane/node-audit.js';
import { privateDir, usePrivateUmask } from './shared/private-state.js';

/** Host set-up plus the pool, the `base` template in it and the admin key. Idempotent; seconds when done. */
export async function setup(config: ForkdConfig, logger: Logger, progress: Progress): Promise<Node> {
  const { node, control } = await setupWithControl(config, logger, progress);
  control.close();
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
  progress({ step: 'storage pool' });
  const t0 = Date.now();
  const node = await openNode(config, logger, { onEvent: auditNodeEvents(control) });
  progress({ step: 'storage pool', done: true, ms: Date.now() - t0 });
  if (!(await node.templates.has('base'))) {
    const t1 = Date.now();
    progress({ step: 'template base', detail: 'importing into the pool' });
    await node.templates.importDir('base', host.baseRootfs);
    progress({ step: 'template base', done: true, ms: Date.now() - t1 });
  }
  return { node, control };
}

export interface Daemon {
  node: Node;
  control: ControlPlane;
  server: RunningServer;
  close(): Promise<void>;
}

/**
 * `forkd serve`: set-up when needed, then the API. Sandboxes are not stopped
 * on shutdown: they keep running and the next start re-adopts them.
 */
export async function startDaemon(config: ForkdConfig, logger: Logger, progress: Progress): Promise<Daemon> {
  const { node, control } = await setupWithControl(config, logger, progress);
  const server = await listen({ svc: node.manager, control, logger, proxyDomain: config.proxyDomain }, config.host, config.port);
  node.manager.startWarmPool();
  const ticker = setInterval(() => void node.manager.tick().catch((err) => logger.error('policy tick failed', { error: String(err) })), config.policyTickS * 1000);
  ticker.unref();
  return {
    node,
    control,
    server,
    async close() {
      clearInterval(ticker);
      await server.close();
      await node.close();
      control.close();
    },
  };
}
