import type { ForkdConfig, ServeRole } from '@forkd/server';
import { expectPositionals, parseOptions, parsePositiveInt } from '../args.js';
import type { CliCommand } from '../command.js';
import { loadServer } from '../load-server.js';
import { DurationMemory } from '../duration-memory.js';
import { planFor } from '../setup-plan.js';
import { StepProgress } from '../step-progress.js';
import { UsageError } from '../usage-error.js';
import { cliVersion } from '../version.js';

const USAGE = `Usage: forkd serve [--port N] [--host H] [--role all|node|control-plane] [--node URL]

Runs forkd in the foreground (set-up first when needed): its API on --port
(with /mcp, /metrics, /openapi.json and the web console at /), E2B's API on
$FORKD_E2B_API_PORT (3000) and E2B's envd on $FORKD_E2B_ENVD_PORT (49983), all
on --host. Ctrl-C or SIGTERM stops it; sandboxes keep running and are adopted
on the next start. Every setting is an environment variable (FORKD_*: see the
README's Configuration).

Options:
  -p, --port N   port to listen on (default $FORKD_PORT or 8080)
      --host H   address to listen on (default $FORKD_HOST or 127.0.0.1)
      --role R   all: the API and the node in one process (default $FORKD_ROLE or all);
                 node: only the node, serving the node contract under /node/v1 to a
                 control plane elsewhere, authenticated by the token in $FORKD_NODE_TOKEN_FILE
                 (default <state dir>/node.token, made at first start, root only);
                 control-plane: only the API, over the node at --node, or without
                 --node over a fleet: nodes started with FORKD_CONTROL_PLANE_URL join it
                 with the token in its <state dir>/join.token (see \`forkd nodes\`), or,
                 with FORKD_NODE_DISCOVERY=kubernetes, are found as pods (docs/kubernetes.md)
      --node URL the one node of role control-plane (default $FORKD_NODE_URL); its token
                 is read from $FORKD_NODE_TOKEN_FILE (default <state dir>/node.token)
`;

/** `roles`: the server's SERVE_ROLES (passed in: this module must load without the server). */
export function parseServeArgs(argv: string[], roles: readonly ServeRole[]): Partial<ForkdConfig> {
  const { values, positionals } = parseOptions({ args: argv, allowPositionals: true, options: { port: { type: 'string', short: 'p' }, host: { type: 'string' }, role: { type: 'string' }, node: { type: 'string' } } });
  expectPositionals(positionals, []);
  const overrides: Partial<ForkdConfig> = {};
  const port = parsePositiveInt('--port', values.port);
  if (port !== undefined) {
    if (port > 65535) throw new UsageError('--port must be at most 65535');
    overrides.port = port;
  }
  if (values.host !== undefined) overrides.host = values.host;
  if (values.role !== undefined) {
    if (!(roles as readonly string[]).includes(values.role)) throw new UsageError(`--role must be one of ${roles.join(', ')}`);
    overrides.role = values.role as ServeRole;
  }
  if (values.node !== undefined) overrides.nodeUrl = values.node;
  return overrides;
}

export const serveCommand: CliCommand = {
  name: 'serve',
  usage: USAGE,
  async run(argv) {
    const { createLogger, installLastResortHandlers, loadConfig, SERVE_ROLES, startControlPlaneDaemon, startDaemon, startNodeDaemon, typicalSetupSteps, usePrivateUmask } = await loadServer('serve');
    // First: forkd's state is private, and so is whatever the tools it runs create (umask 077).
    usePrivateUmask();
    const overrides = parseServeArgs(argv, SERVE_ROLES);
    const config = loadConfig(process.env, overrides);
    const memory = new DurationMemory();
    const progress = new StepProgress(process.stderr, { plan: planFor(memory, 'serve', typicalSetupSteps()) });
    let daemon;
    try {
      const logger = createLogger();
      installLastResortHandlers(logger);
      // The API's MCP endpoint (/mcp): an MCP server over the SDK, calling this daemon's API with each caller's key.
      const { mcpHttpEndpoint } = await import('@forkd/mcp');
      const extras = { mcp: mcpHttpEndpoint(cliVersion()) };
      if (config.role === 'node') daemon = await startNodeDaemon(config, logger, progress.event);
      else if (config.role === 'control-plane') daemon = await startControlPlaneDaemon(config, logger, extras);
      else daemon = await startDaemon(config, logger, progress.event, extras);
    } catch (err) {
      progress.fail();
      throw err;
    }
    if (progress.ran.length) memory.remember('serve', progress.ran);
    if ('tokenPath' in daemon) process.stderr.write(`forkd node serving on ${daemon.server.url}, token in ${daemon.tokenPath} (Ctrl-C to stop)\n`);
    else {
      if ('nodeUrl' in daemon) process.stderr.write(`forkd control plane serving on ${daemon.server.url} over ${daemon.nodeUrl} (Ctrl-C to stop)\n`);
      else process.stderr.write(`forkd serving on ${daemon.server.url} (Ctrl-C to stop)\n`);
      process.stderr.write(`MCP (streamable HTTP): ${daemon.server.url}/mcp\n`);
      const { apiUrl, envdUrl } = daemon.e2b;
      if (apiUrl || envdUrl) process.stderr.write(`E2B-compatible: ${apiUrl ? `E2B_API_URL=${apiUrl}` : 'API off'}, ${envdUrl ? `E2B_SANDBOX_URL=${envdUrl}` : 'envd off'}\n`);
      if (daemon.hosts) process.stderr.write(`Sandbox hosts: https://{port}-{id}.${config.proxyDomain} on ${daemon.hosts.url}${apiUrl && envdUrl && config.proxyTls?.port === 443 ? ` (E2B's SDK needs only E2B_DOMAIN=${config.proxyDomain})` : ''}\n`);
    }
    const d = daemon;
    return new Promise<number>((resolve) => {
      let stopping = false;
      const stop = () => {
        // A second signal while closing means "now".
        if (stopping) process.exit(1);
        stopping = true;
        d.close().then(
          () => resolve(0),
          (err: unknown) => {
            process.stderr.write(`error: closing: ${(err as Error).message}\n`);
            resolve(1);
          },
        );
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
    });
  },
};
