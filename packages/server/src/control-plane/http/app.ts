import { Readable } from 'node:stream';
import { constants as osConstants } from 'node:os';
import { Hono, type Context } from 'hono';
import {
  BuildTemplateRequest,
  CreateSandboxRequest,
  CreateSnapshotRequest,
  ExecRequest,
  ForkRequest,
  RewindRequest,
  SetTimeoutRequest,
  ForkdError,
  ListQuery,
  ListSandboxesQuery,
  MkdirRequest,
  MoveRequest,
  parseProcessSelector,
  PathQuery,
  PinRequest,
  RemoveQuery,
  SignalRequest,
  StdinRequest,
  toForkdError,
  WriteQuery,
  type AuditRecord,
  type ErrorBody,
  type ExecEvent,
  type SpawnRequest,
} from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import type { SpawnOptions } from '../../node/guest/guest-client.js';
import type { ExecExit } from '../../node/manager/sandbox-manager.js';
import { ndjsonStream } from './ndjson.js';
import { presentedKey, refuseKeyInQuery, type Principal } from '../auth/api-keys.js';
import { KeyedBuckets } from '../auth/keyed-buckets.js';
import type { ControlPlane } from '../control-plane.js';
import { mountAdminRoutes } from './admin-routes.js';
import { mountTenantRoutes } from './tenant-routes.js';
import { callerView } from './caller-view.js';
import { Metrics } from './metrics.js';
import { proxyHttp, proxyTarget } from './port-proxy.js';
import type { IncomingMessage } from 'node:http';
import { listPage } from './list-sandboxes.js';
import { openApiDocument } from './openapi.js';
import { SERVER_VERSION } from '../../shared/version.js';
import type { SandboxService } from './sandbox-service.js';
import { validate } from './validate.js';
import { jsonBody } from './json-body.js';
import { errorBody, logRequestError, newRequestId, publicError, REQUEST_ID_HEADER } from './public-error.js';


/** argv of a spawn request: `cmd` as given, or `command` through a login bash. */
export function spawnOptions(r: SpawnRequest): SpawnOptions {
  return {
    argv: r.cmd ?? ['/bin/bash', '-lc', r.command!],
    env: r.env,
    cwd: r.cwd,
    user: r.user,
    tag: r.tag,
    stdin: r.stdin,
    pty: r.pty ? { cols: r.cols ?? 80, rows: r.rows ?? 24 } : undefined,
  };
}

export function signalNumber(s: number | string): number {
  if (typeof s === 'number') return s;
  const n = (osConstants.signals as Record<string, number>)[s];
  if (!n) throw new ForkdError('INVALID_ARGUMENT', `unknown signal ${s}`);
  return n;
}

function selector(c: Context): { pid: number } | { tag: string } {
  const sel = parseProcessSelector(c.req.param('sel') ?? '');
  if (!sel) throw new ForkdError('INVALID_ARGUMENT', 'process selector must be a pid or tag:<tag>');
  return sel;
}

function exitEvent(e: ExecExit): ExecEvent {
  return { type: 'exit', exitCode: e.exitCode, signal: e.signal, oomKilled: e.oomKilled };
}

/** An error event of a stream already answered (NDJSON): logged whole, shown as the caller may see it. */
function streamError(c: Context, err: unknown): ErrorBody['error'] {
  const requestId = (c.get('requestId') as string | undefined) ?? newRequestId();
  const who = c.get('who') as Principal | undefined;
  const log = c.get('logger') as Logger | undefined;
  if (log) logRequestError(log, err, { requestId, method: c.req.method, path: c.req.path, ...(who ? { tenant: who.tenant, keyId: who.keyId } : {}), stream: true });
  return publicError(err, requestId, !!who?.admin);
}

/** Streams a process (already started or attached) as NDJSON events. */
function processStream(
  c: Context,
  start: (h: { onStdout(d: Buffer): Promise<void>; onStderr(d: Buffer): Promise<void>; onDropped(n: number): Promise<void>; onRewound(): Promise<void> }) => Promise<{ process: { pid: number; tag: string | undefined; pty: boolean; detach(): void }; exit: Promise<ExecExit | null> }>,
  after?: (p: { pid: number }) => Promise<void>,
) {
  let detach = () => {};
  const out = ndjsonStream(() => detach());
  const h = {
    onStdout: (d: Buffer) => out.write({ type: 'stdout', data: d.toString('base64') }),
    onStderr: (d: Buffer) => out.write({ type: 'stderr', data: d.toString('base64') }),
    onDropped: (n: number) => out.write({ type: 'dropped', bytes: n }),
    onRewound: () => out.write({ type: 'rewound' }),
  };
  return start(h).then(async ({ process, exit }) => {
    detach = () => process.detach();
    void out.write({ type: 'started', pid: process.pid, ...(process.tag ? { tag: process.tag } : {}), pty: process.pty });
    void (async () => {
      try {
        if (after) await after(process);
        const e = await exit;
        if (e) await out.write(exitEvent(e));
      } catch (err) {
        await out.write({ type: 'error', error: streamError(c, err) });
      } finally {
        out.close();
      }
    })();
    return c.body(out.stream, 200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  });
}

export interface AppDeps {
  svc: SandboxService;
  control: ControlPlane;
  logger: Logger;
  /** Host-based port proxy domain (`{port}-{id}.{domain}`). */
  proxyDomain?: string | undefined;
}

export type AppEnv = { Variables: { who: Principal; view: SandboxService; target: string | undefined; sandbox: string | undefined; requestId: string; logger: Logger } };

/** The caller's tenant-scoped view of the service (set by the auth middleware). */
const v = (c: Context<AppEnv>): SandboxService => c.get('view');

/** One audit record: the route pattern as the operation, the command or path as the target. */
function auditRecord(c: Context<AppEnv>, who: Principal | undefined, code: string, status: number, t0: number): Omit<AuditRecord, 'id'> {
  const route = c.req.routePath && c.req.routePath !== '/v1/*' ? c.req.routePath : c.req.path.slice(0, 200);
  const sandboxId = c.get('sandbox') ?? /^\/v1\/sandboxes\/(sbx-[a-z0-9]{12})/.exec(c.req.path)?.[1];
  const target = c.get('target') ?? c.req.query('path') ?? /^\/v1\/(?:snapshots|keys|templates|tenants)\/([^/]+)/.exec(c.req.path)?.[1];
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

/** The REST API (`/v1`). Every request is validated by the protocol's zod schemas. */
export function createApp({ svc, control, logger, proxyDomain }: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const metrics = new Metrics();
  // Keys only in headers here: `?api_key=` is for WebSocket upgrades (stream-socket.ts), whose browsers cannot set headers.
  const caller = (c: Context<AppEnv>) => {
    const source = sourceAddress(c);
    control.keys.throttle.check(source);
    refuseKeyInQuery(new URL(c.req.url).searchParams);
    return control.keys.authenticate(presentedKey((n) => c.req.header(n), new URLSearchParams()), source);
  };
  // Refused calls are audited too, but a flood of them must not fill the log: 60 in a burst, then one a second (all sources together).
  const unauthenticatedAudit = new KeyedBuckets({ capacity: 60, perSecond: 1, maxKeys: 1 });
  let unauditedRefusals = 0;

  // Every request gets an id first: responses carry it (header, error bodies, stream error events), so does the log.
  app.use('*', async (c, next) => {
    const requestId = newRequestId();
    c.set('requestId', requestId);
    c.set('logger', logger);
    await next();
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
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    if (!incoming) throw new ForkdError('NOT_IMPLEMENTED', 'the port proxy runs only in the Node server');
    return proxyHttp(svc, control, t, incoming);
  });

  app.get('/v1/health', (c) => c.json({ ok: true }));
  const openapi = openApiDocument(SERVER_VERSION);
  app.get('/openapi.json', (c) => c.json(openapi));

  // Every other call: who is calling (the key's tenant scopes all it sees), then one audit record.
  app.use('/v1/*', async (c, next) => {
    if (c.req.path === '/v1/health') return next();
    const t0 = performance.now();
    let who: Principal;
    try {
      who = caller(c);
    } catch (err) {
      const fe = toForkdError(err);
      if (unauthenticatedAudit.take('*')) {
        if (unauditedRefusals > 0) logger.warn('unauthenticated calls left out of the audit log', { count: unauditedRefusals });
        unauditedRefusals = 0;
        control.store.appendAudit(auditRecord(c, undefined, fe.code, fe.status, t0));
      } else unauditedRefusals++;
      throw err;
    }
    c.set('who', who);
    c.set('view', callerView(svc, control, who));
    // Snapshot routes are filed under their sandbox (looked up first: a delete removes the record).
    const snap = /^\/v1\/snapshots\/(snap-[a-z0-9]{12})/.exec(c.req.path)?.[1];
    if (snap) {
      try {
        c.set('sandbox', c.get('view').getSnapshot(snap).sandboxId);
      } catch {
        /* unknown or not the caller's: the call itself answers NOT_FOUND */
      }
    }
    await next();
    const code = c.error ? toForkdError(c.error).code : c.res.status === 404 ? 'NOT_FOUND' : 'OK';
    const rec = auditRecord(c, who, code, c.res.status, t0);
    control.store.appendAudit(rec);
    metrics.observe(rec.operation, code, rec.durationMs);
  });

  // Prometheus scrapes with an admin key (`authorization: Bearer`): the numbers span every tenant.
  app.get('/metrics', async (c) => {
    const who = caller(c);
    if (!who.admin) throw new ForkdError('PERMISSION_DENIED', 'metrics need an admin key');
    return c.text(metrics.render(svc.list(), await svc.stats()), 200, { 'content-type': 'text/plain; version=0.0.4' });
  });

  mountAdminRoutes(app, control);
  mountTenantRoutes(app, control, svc);

  app.get('/v1/templates', (c) => c.json({ templates: v(c).templates() }));
  // Builds take minutes: progress lines stream as NDJSON, then `done` or `error`.
  app.post('/v1/templates', async (c) => {
    const req = validate(BuildTemplateRequest, await jsonBody(c));
    const out = ndjsonStream(() => {});
    void v(c)
      // Awaited: a client that reads slowly slows the build's output, not the daemon's memory.
      .buildTemplate(req, (line) => out.write({ type: 'progress', line }))
      .then(
        (template) => out.write({ type: 'done', template }),
        (err) => out.write({ type: 'error', error: streamError(c, err) }),
      )
      .finally(() => out.close());
    return c.body(out.stream, 200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  });
  app.delete('/v1/templates/:name', async (c) => {
    await v(c).deleteTemplate(c.req.param('name'));
    return c.body(null, 204);
  });

  app.post('/v1/sandboxes', async (c) => {
    const req = validate(CreateSandboxRequest, await jsonBody(c));
    const created = await v(c).create(req);
    c.set('sandbox', created.id);
    return c.json(created, 201);
  });
  app.get('/v1/sandboxes', (c) => c.json(listPage(v(c).list(), validate(ListSandboxesQuery, c.req.query()))));
  app.get('/v1/sandboxes/:id', (c) => c.json(v(c).get(c.req.param('id'))));
  app.delete('/v1/sandboxes/:id', async (c) => {
    await v(c).delete(c.req.param('id'));
    return c.body(null, 204);
  });
  app.get('/v1/sandboxes/:id/metrics', async (c) => c.json(await v(c).metrics(c.req.param('id'))));

  app.post('/v1/sandboxes/:id/snapshots', async (c) => {
    const r = validate(CreateSnapshotRequest, await jsonBody(c));
    return c.json(await v(c).snapshot(c.req.param('id'), r), 201);
  });
  app.get('/v1/sandboxes/:id/snapshots', (c) => c.json({ snapshots: v(c).timeline(c.req.param('id')) }));
  app.get('/v1/snapshots/:snap', (c) => c.json(v(c).getSnapshot(c.req.param('snap'))));
  app.post('/v1/snapshots/:snap/pin', async (c) => {
    const r = validate(PinRequest, await jsonBody(c));
    return c.json(await v(c).pinSnapshot(c.req.param('snap'), r.pinned));
  });
  app.delete('/v1/snapshots/:snap', async (c) => {
    await v(c).deleteSnapshot(c.req.param('snap'));
    return c.body(null, 204);
  });
  app.post('/v1/sandboxes/:id/pause', async (c) => c.json(await v(c).pause(c.req.param('id'))));
  app.post('/v1/sandboxes/:id/resume', async (c) => c.json(await v(c).resume(c.req.param('id'))));
  app.post('/v1/sandboxes/:id/timeout', async (c) => {
    const r = validate(SetTimeoutRequest, await jsonBody(c));
    return c.json(await v(c).setTimeout(c.req.param('id'), r.timeoutSeconds));
  });
  app.post('/v1/sandboxes/:id/rewind', async (c) => {
    const r = validate(RewindRequest, await jsonBody(c));
    return c.json(await v(c).rewind(c.req.param('id'), r.snapshot));
  });
  // A sandbox id forks it live (implicit snapshot); a snapshot id forks that snapshot.
  app.post('/v1/sandboxes/:id/fork', async (c) => {
    const r = validate(ForkRequest, await jsonBody(c));
    return c.json({ sandboxes: await v(c).fork(c.req.param('id'), r.count) }, 201);
  });
  app.post('/v1/snapshots/:snap/fork', async (c) => {
    const r = validate(ForkRequest, await jsonBody(c));
    return c.json({ sandboxes: await v(c).fork(c.req.param('snap'), r.count) }, 201);
  });
  app.get('/v1/sandboxes/:id/tree', (c) => c.json(v(c).tree(c.req.param('id'))));

  app.post('/v1/sandboxes/:id/exec', async (c) => {
    const id = c.req.param('id');
    const req = validate(ExecRequest, await jsonBody(c));
    const opts = spawnOptions({ ...req, stdin: req.stdin || req.stdinData !== undefined });
    c.set('target', opts.argv.join(' '));
    if (req.background) {
      const { process } = await v(c).spawn(id, opts);
      process.detach();
      return c.json({ pid: process.pid, ...(process.tag ? { tag: process.tag } : {}) }, 201);
    }
    return processStream(
      c,
      (h) => v(c).spawn(id, opts, h),
      async (p) => {
        if (req.stdinData !== undefined) await (await v(c).guest(id)).writeStdin({ pid: p.pid }, Buffer.from(req.stdinData, 'base64'), true);
        if (req.timeoutMs) {
          const t = setTimeout(() => void v(c).guest(id).then((g) => g.kill({ pid: p.pid }, osConstants.signals.SIGKILL)).catch(() => {}), req.timeoutMs);
          t.unref();
        }
      },
    );
  });

  app.get('/v1/sandboxes/:id/processes', async (c) => c.json({ processes: await (await v(c).guest(c.req.param('id'))).listProcesses() }));
  app.get('/v1/sandboxes/:id/processes/:sel/output', (c) => {
    const id = c.req.param('id');
    const sel = selector(c);
    return processStream(c, (h) => v(c).attach(id, sel, h));
  });
  app.post('/v1/sandboxes/:id/processes/:sel/signal', async (c) => {
    const sel = selector(c);
    const { signal } = validate(SignalRequest, await jsonBody(c));
    await (await v(c).guest(c.req.param('id'))).kill(sel, signalNumber(signal));
    return c.body(null, 204);
  });
  app.post('/v1/sandboxes/:id/processes/:sel/stdin', async (c) => {
 const sel = selector(c);
    const r = validate(StdinRequest, await jsonBody(c));
    await (await v(c).guest(c.req.param('id'))).writeStdin(sel, r.data !== undefined ? Buffer.from(r.data, 'base64') : undefined, r.eof ?? false);
    return c.body(null, 204);
  });

  app.get('/v1/sandboxes/:id/files', async (c) => {
    const { path } = validate(PathQuery, c.req.query());
    const f = await (await v(c).guest(c.req.param('id'))).readFile(path);
    const body = Readable.toWeb(Readable.from(f.chunks)) as ReadableStream<Uint8Array>;
    return c.body(body, 200, { 'content-type': 'application/octet-stream', 'content-length': String(f.size) });
  });
  app.put('/v1/sandboxes/:id/files', async (c) => {
    const q = validate(WriteQuery, c.req.query());
    const body = c.req.raw.body;
    const source: AsyncIterable<Uint8Array> | Uint8Array = body ? (body as unknown as AsyncIterable<Uint8Array>) : new Uint8Array(0);
    const size = await (await v(c).guest(c.req.param('id'))).writeFile(q.path, source, {
      mode: q.mode,
      append: q.append === 'true' || q.append === '1',
      user: q.user,
    });
    return c.json({ path: q.path, size }, 201);
  });
  app.delete('/v1/sandboxes/:id/files', async (c) => {
    const q = validate(RemoveQuery, c.req.query());
    await (await v(c).guest(c.req.param('id'))).remove(q.path, q.recursive === 'true' || q.recursive === '1');
    return c.body(null, 204);
  });
  app.get('/v1/sandboxes/:id/files/list', async (c) => {
    const q = validate(ListQuery, c.req.query());
    return c.json({ entries: await (await v(c).guest(c.req.param('id'))).listDir(q.path, q.depth) });
  });
  app.get('/v1/sandboxes/:id/files/stat', async (c) => {
    const { path } = validate(PathQuery, c.req.query());
    return c.json(await (await v(c).guest(c.req.param('id'))).stat(path));
  });
  app.post('/v1/sandboxes/:id/files/mkdir', async (c) => {
    const r = validate(MkdirRequest, await jsonBody(c));
    c.set('target', r.path);
    await (await v(c).guest(c.req.param('id'))).mkdir(r.path, r.user);
    return c.body(null, 204);
  });
  app.post('/v1/sandboxes/:id/files/move', async (c) => {
    const r = validate(MoveRequest, await jsonBody(c));
    c.set('target', `${r.from} -> ${r.to}`);
    await (await v(c).guest(c.req.param('id'))).move(r.from, r.to);
    return c.body(null, 204);
  });
  app.get('/v1/sandboxes/:id/files/watch', async (c) => {
    const q = validate(RemoveQuery, c.req.query());
    let w: { close(): void } | undefined;
    const out = ndjsonStream(() => w?.close());
    w = await v(c).watch(c.req.param('id'), q.path, q.recursive === 'true' || q.recursive === '1', (e) => out.write(e));
    return c.body(out.stream, 200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  });

  return app;
}
