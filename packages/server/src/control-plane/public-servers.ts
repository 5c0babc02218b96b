import type { NodeService } from '../node-contract/index.js';
import type { ForkdConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { RunningServer } from '../shared/http-server.js';
import { apiTlsFiles, proxyTlsFiles } from '../shared/tls-config.js';
import type { Fleet } from '../fleet/fleet.js';
import type { ControlPlane } from './control-plane.js';
import { startE2bServers, type E2bServers } from './e2b/e2b-servers.js';
import type { McpEndpoint } from './http/mcp-endpoint.js';
import { serveSandboxHosts } from './http/sandbox-hosts.js';
import { apiHandlers, serveApi } from './http/server.js';

export interface PublicServersOptions {
  svc: NodeService;
  control: ControlPlane;
  logger: Logger;
  config: ForkdConfig;
  mcp?: McpEndpoint | undefined;
  fleet?: Fleet | undefined;
}

export interface PublicServers {
  /** forkd's API. */
  server: RunningServer;
  /** The E2B-compatible API and envd gateway (either may be off). */
  e2b: E2bServers;
  /** `{port}-{id}.{domain}` over HTTPS (FORKD_PROXY_TLS_CERT_FILE); absent: not configured. */
  hosts?: RunningServer | undefined;
  close(): Promise<void>;
}

/**
 * What a control plane serves to callers over one node service: forkd's API,
 * E2B's API and envd gateway, and the sandbox hosts' HTTPS listener, which
 * serves the same API handlers (one port proxy, one authentication) and the
 * same E2B listeners by host name. Closed in the reverse order.
 */
export async function startPublicServers(o: PublicServersOptions): Promise<PublicServers> {
  const { svc, control, logger, config } = o;
  const api = apiHandlers({ svc, control, logger, proxyDomain: config.proxyDomain, mcp: o.mcp, fleet: o.fleet });
  const opened: (() => Promise<void>)[] = [];
  const close = async () => {
    for (const c of opened.splice(0).reverse()) await c();
  };
  try {
    // Read first: a bad certificate stops the start before anything listens.
    const hostsTls = await proxyTlsFiles(config);
    const server = await serveApi(api, config.host, config.port, await apiTlsFiles(config));
    opened.push(() => server.close());
    const sandboxDomain = hostsTls ? config.proxyDomain : undefined;
    const e2b = await startE2bServers({ svc, control, logger, stateDir: config.stateDir, host: config.host, apiPort: config.e2bApiPort, envdPort: config.e2bEnvdPort, sandboxDomain });
    opened.push(() => e2b.close());
    let hosts: RunningServer | undefined;
    if (hostsTls && sandboxDomain && config.proxyTls) {
      hosts = await serveSandboxHosts({ domain: sandboxDomain, api, e2b: e2b.listeners }, config.host, config.proxyTls.port, hostsTls);
      opened.push(() => hosts!.close());
    }
    return { server, e2b, hosts, close };
  } catch (err) {
    await close();
    throw err;
  }
}
