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
import { Metrics } from './http/metrics.js';
import { instrumentNode } from '../node-contract/instrumented-node.js';
import { OtlpExporter } from '../shared/otlp-exporter.js';
import { setSpanSink } from '../shared/profile.js';
import { noTracer, SpanTracer, type Tracer } from '../shared/tracer.js';
import { SERVER_VERSION } from '../shared/version.js';

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
 * The metrics every server renders, and the tracer of lifecycle operations:
 * spans to FORKD_OTLP_ENDPOINT's collector, with the profile spans of the
 * node's work (shared/profile.ts) as their children; without it, none.
 */
function observability(config: ForkdConfig, logger: Logger): { metrics: Metrics; tracer: Tracer; close: () => Promise<void> } {
  if (!config.otlpTracesUrl) return { metrics: new Metrics(), tracer: noTracer, close: async () => {} };
  const exporter = new OtlpExporter({ url: config.otlpTracesUrl, serviceName: 'forkd', serviceVersion: SERVER_VERSION });
  const tracer = new SpanTracer((s) => exporter.add(s));
  const toTrace = tracer.profileSink();
  // FORKD_PROFILE's stderr lines (or a bench's sink) keep coming.
  const before = setSpanSink((s) => (before?.(s), toTrace(s)));
  logger.info('tracing', { otlp: config.otlpTracesUrl });
  return {
    metrics: new Metrics(() => exporter.stats()),
    tracer,
    close: async () => {
      setSpanSink(before);
      await exporter.close();
    },
  };
}

/**
 * What a control plane serves to callers over one node service: forkd's API,
 * E2B's API and envd gateway, and the sandbox hosts' HTTPS listener, which
 * serves the same API handlers (one port proxy, one authentication) and the
 * same E2B listeners by host name. Closed in the reverse order.
 */
export async function startPublicServers(o: PublicServersOptions): Promise<PublicServers> {
  const { control, logger, config } = o;
  const opened: (() => Promise<void>)[] = [];
  const { metrics, tracer, close: closeTracing } = observability(config, logger);
  opened.push(closeTracing);
  // Timed and traced once here, for every caller: forkd's API and E2B's alike.
  const svc = instrumentNode(o.svc, metrics, tracer);
  const api = apiHandlers({ svc, control, logger, proxyDomain: config.proxyDomain, mcp: o.mcp, fleet: o.fleet, metrics });
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
