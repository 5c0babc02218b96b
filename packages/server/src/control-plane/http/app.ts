import type { IncomingMessage, ServerResponse } from 'node:http';
import { Hono, type Context, type MiddlewareHandler } from 'hono';
import { ForkdError, SANDBOX_ID_SOURCE, SNAPSHOT_ID_SOURCE, TENANT_HEADER, toForkdError, type AuditRecord } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { actingAs } from '../auth/acting-tenant.js';
import type { Logger } from '../../shared/logger.js';
import { SERVER_VERSION } from '../../shared/version.js';
import { presentedKey, refuseKeyInQuery, type Principal } from '../auth/api-keys.js';
import { KeyedBuckets } from '../../shared/keyed-buckets.js';
import type { ControlPlane } from '../control-plane.js';
import type { AppEnv } from './app-env.js';
import { callerView } from './caller-view.js';
import { Metrics } from './metrics.js';
import { withContext } from '../../shared/request-context.js';
import { parseTraceparent } from '../../shared/traceparent.js';
import { openApiDocument } from './openapi.js';
import { proxyHttp, proxyTarget } from './port-proxy.js';
import { errorBody, logRequestError, newRequestId, REQUEST_ID_HEADER } from './public-error.js';
import { mountRoutes } from './routes/index.js';
import { SecretService } from '../secrets/secret-service.js';
import { mcpHandler, type McpEndpoint } from './mcp-endpoint.js';
import type { Fleet } from '../../fleet/fleet.js';
import { mountConsole } from './console-assets.js';
import { OpenStreams } from '../../shared/open-streams.js';

export type { AppEnv } from './app-env.js';

export interface AppDeps {
  /** The node, unscoped: every caller reaches it through its own tenant's view. */
  svc: NodeService;
  control: ControlPlane;
  logger: Logger;
  /** Host-based port proxy domain (`{port}-{id}.{domain}`). */
  proxyDomain?: string | undefined;
  /** Streamable-HTTP MCP at `/mcp`, authenticated and audited as the API (absent: no `/mcp`). */
  mcp?: McpEndpoint | undefined;
  /** The fleet `svc` routes over, when nodes join this control plane (the nodes routes). */
  fleet?: Fleet | undefined;
  /** What /metrics renders; the same object times the lifecycle operations of `svc` (see public-servers.ts). Absent: a new one. */
  metrics?: Metrics | undefined;
  /** Process streams open to clients (ended cleanly when the server stops). Absent: a new one. */
  streams?: OpenStreams | undefined;
}

const SANDBOX_IN_PATH = new RegExp(`^/v1/sandboxes/(${SANDBOX_ID_SOURCE})`);
const SNAPSHOT_IN_PATH = new RegExp(`^/v1/snapshots/(${SNAPSHOT_ID_SOURCE})`);
const TARGET_IN_PATH = /^\/v1\/(?:snapshots|keys|templates|tenants|secrets)\/([^/]+)/;

/** One audit record: the route pattern as the operation, the command or path as the target. */
function auditRecord(c: Context<AppEnv>, who: Principal | undefined, code: string, status: number, t0: number): Omit<AuditRecord, 'id'> {
  const route = c.req.routePath && c.req.routePath !== '/v1/*' ? c.req.routePath : c.req.path.slice(0, 200);
  const sandboxId = c.get('sandbox') ?? SANDBOX_IN_PATH.exec(c.req.path)?.[1];
  const target = c.get('target') ?? c.req.query('path') ?? TARGET_IN_PATH.exec(c.req.path)?.[1];
  return {
    at: new Date().toISOString(),
    ...(who ? { keyId: who.keyId, tenant: who.tenant } : {}),
    ...(sandboxId ? { sandboxId } : {}),
    operation: `${c.req.method} ${route}`,
    ...(target ? { target: target.slice(0, 1000) } : {}),
    code,
    status,
    durationMs: Math.round((performance.now() - t0) * 10) / 10,
    requestId: c.get('requestId'),
  };
}

/** The caller's TCP peer address (the key of the failed-authentication throttle); `unknown` outside the Node server. */
function sourceAddress(c: Context<AppEnv>): string {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown';
}

/**
 * The REST API (`/v1`): request ids, errors, the port proxy, authentication
 * and the audit record around the route table (routes/index.ts).
 */
export function createApp({ svc, control, logger, proxyDomain, mcp, fleet, metrics = new Metrics(), streams = new OpenStreams() }: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  // Keys only in headers here: `?api_key=` is for WebSocket upgrades (stream-socket.ts), whose browsers cannot set headers.
  const caller = (c: Context<AppEnv>) => {
    const source = sourceAddress(c);
    control.keys.throttle.check(source);
    refuseKeyInQuery(new URL(c.req.url).searchParams);
    return control.keys.authenticate(presentedKey((n) => c.req.header(n), new URLSearchParams()), source).then((who) => actingAs(who, c.req.header(TENANT_HEADER)));
  };
  const secrets = new SecretService(control.store, control.cipher, svc, logger);
  // Nodes hold credentials in memory only: a restarted daemon (or node) gets every live grant again.
  void secrets.pushAll().catch((err: unknown) => logger.warn('grants not pushed at start', { error: String(err) }));
  const deps = { svc, control, metrics, caller, secrets, fleet, logger };
  // Refused calls are audited too, but a flood of them must not fill the log: 60 in a burst, then one a second (all sources together).
  const unauthenticatedAudit = new KeyedBuckets({ capacity: 60, perSecond: 1, maxKeys: 1 });
  let unauditedRefusals = 0;

  // Every request gets an id first: responses carry it (header, error bodies, stream error events), so does the log.
  app.use('*', async (c, next) => {
    const requestId = newRequestId();
    c.set('requestId', requestId);
    c.set('logger', logger);
    c.set('streams', streams);
    // Everything the request awaits logs (and traces) under its id, the node's own lines included; a caller's traceparent makes its spans the caller's trace's.
    await withContext({ requestId, trace: parseTraceparent(c.req.header('traceparent')) }, next);
    // Set on the response made, not on the context: a proxied answer keeps its own server's x-request-id.
    if (!c.res.headers.has(REQUEST_ID_HEADER)) {
      try {
        c.res.headers.set(REQUEST_ID_HEADER, requestId);
      } catch {
        /* immutable headers: the id is still in the log */
      }
    }
  });

  // Tenants get the code, forkd's message and the request id; the log (and admin keys) get the rest.
  app.onError((err, c) => {
    const requestId = c.get('requestId') ?? newRequestId();
    const who = c.get('who') as Principal | undefined;
    logRequestError(logger, err, { requestId, method: c.req.method, path: c.req.path, ...(who ? { tenant: who.tenant, keyId: who.keyId } : {}) });
    const fe = toForkdError(err);
    const retry = fe.details?.retryAfterSeconds;
    return c.json(errorBody(err, requestId, !!who?.admin), fe.status as 400, { [REQUEST_ID_HEADER]: requestId, ...(typeof retry === 'number' ? { 'retry-after': String(retry) } : {}) });
  });
  app.notFound((c) => c.json(errorBody(new ForkdError('NOT_FOUND', `no route ${c.req.method} ${c.req.path}`), c.get('requestId') ?? newRequestId(), false), 404));

  // The port proxy comes first: on a sandbox's own host name every path is the sandbox's.
  app.use('*', async (c, next) => {
    const url = new URL(c.req.url);
    const t = proxyTarget(c.req.header('host'), url.pathname + url.search, proxyDomain);
    if (!t) return next();
    const env = c.env as { incoming?: IncomingMessage; outgoing?: ServerResponse } | undefined;
    if (!env?.incoming) throw new ForkdError('NOT_IMPLEMENTED', 'the port proxy runs only in the Node server');
    return proxyHttp(svc, control, t, env.incoming, env.outgoing);
  });

  const openapi = openApiDocument(SERVER_VERSION);
  app.get('/openapi.json', (c) => c.json(openapi));
  mountRoutes(app, deps, 'public');
  // The web console's static files (no key: the page signs in with one and calls the API like any client).
  mountConsole(app);

  // Every other call: who is calling (the key's tenant scopes all it sees), then one audit record.
  const authenticated: MiddlewareHandler<AppEnv> = async (c, next) => {
    const t0 = performance.now();
    let who: Principal;
    try {
      who = await caller(c);
    } catch (err) {
      const fe = toForkdError(err);
      if (unauthenticatedAudit.take('*')) {
        if (unauditedRefusals > 0) logger.warn('unauthenticated calls left out of the audit log', { count: unauditedRefusals });
        unauditedRefusals = 0;
        await control.store.appendAudit(auditRecord(c, undefined, fe.code, fe.status, t0));
      } else unauditedRefusals++;
      throw err;
    }
    c.set('who', who);
    c.set('view', callerView(svc, control, who));
    // Snapshot routes are filed under their sandbox (looked up first: a delete removes the record).
    const snap = SNAPSHOT_IN_PATH.exec(c.req.path)?.[1];
    if (snap) {
      try {
        c.set('sandbox', (await c.get('view').getSnapshot(snap)).sandboxId);
      } catch {
        /* unknown or not the caller's: the call itself answers NOT_FOUND */
      }
    }
    await next();
    const code = c.error ? toForkdError(c.error).code : c.res.status === 404 ? 'NOT_FOUND' : 'OK';
    const rec = auditRecord(c, who, code, c.res.status, t0);
    await control.store.appendAudit(rec);
    metrics.observe(rec.operation, code, rec.durationMs);
  };
  app.use('/v1/*', authenticated);
  mountRoutes(app, deps, 'authenticated');
  if (mcp) {
    // Same key check, throttle and audit record as the API: a wrong key is a 401 before any MCP handling.
    app.use('/mcp', authenticated);
    app.all('/mcp', mcpHandler(mcp));
  }
  return app;
}
