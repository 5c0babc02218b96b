import type { IncomingMessage } from 'node:http';
import { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { z } from 'zod';
import { ForkdError, SANDBOX_ID_SOURCE, toForkdError, type SandboxInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { presentedKey, type Principal } from '../auth/api-keys.js';
import { KeyedBuckets } from '../../shared/keyed-buckets.js';
import { callerView } from '../http/caller-view.js';
import { logRequestError, newRequestId } from '../http/public-error.js';
import { withContext } from '../../shared/request-context.js';
import { ConnectBody, ForkBody, NetworkConfig, NewSandbox, PauseBody, SnapshotBody, TimeoutBody } from './api-schemas.js';
import { e2bCreateNetwork, e2bUpdateNetwork } from './e2b-network.js';
import { apiError, E2bApiError } from './e2b-errors.js';
import { sandboxReach, type E2bContext } from './e2b-context.js';
import { pageSandboxes, parseListQuery } from './list-paging.js';
import { metricSample } from './metrics-sample.js';
import { attributesMetadata, DEFAULT_TIMEOUT_S, detailBody, e2bState, listedBody, sandboxBody } from './sandbox-mapping.js';
import { listSnapshots } from './snapshot-list.js';
import { e2bTemplateName } from './template-aliases.js';
import { body, type C, type E2bEnv } from './e2b-request.js';
import { registerTemplateBuilds, registerTemplateUploads } from './template-builds.js';

const SANDBOX_ID = new RegExp(`^${SANDBOX_ID_SOURCE}$`);

/** A sandbox id from the path: anything that is not a forkd id is simply not found. */
function sandboxParam(c: C): string {
  const id = c.req.param('sandboxID') ?? '';
  if (!SANDBOX_ID.test(id)) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
  c.set('sandbox', id);
  return id;
}

/** A sandbox E2B can see: stopping or failed ones are gone. */
async function visible(view: NodeService, id: string): Promise<SandboxInfo> {
  const s = await view.get(id);
  if (!e2bState(s)) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
  return s;
}

function sourceAddress(c: C): string {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress ?? 'unknown';
}

/**
 * E2B's control-plane REST API over the caller's tenant-scoped view: the same
 * keys, ownership, quotas and audit log as forkd's own `/v1` (app.ts); only
 * the shapes are E2B's.
 */
export function createE2bApi(ctx: E2bContext): Hono<E2bEnv> {
  const { svc, control, logger, lifetimes, streams } = ctx;
  const reach = (id: string) => sandboxReach(ctx, id);
  const app = new Hono<E2bEnv>();

  app.onError((err, c) => {
    const requestId = c.get('requestId') ?? newRequestId();
    if (err instanceof E2bApiError) return c.json({ code: err.status, message: err.message }, err.status as 400);
    logRequestError(logger, err, { requestId, method: c.req.method, path: c.req.path, surface: 'e2b' });
    const { status, body: b, retryAfter } = apiError(err, requestId);
    return c.json(b, status as 400, retryAfter !== undefined ? { 'retry-after': String(retryAfter) } : {});
  });
  app.notFound((c) => c.json({ code: 404, message: `no route ${c.req.method} ${c.req.path}` }, 404));

  app.get('/health', (c) => c.body(null, 204));
  // Before the key check and the 1 MiB limit: the SDK PUTs template files to a signed URL, without its key.
  registerTemplateUploads(app, ctx);
  // Control-plane bodies are small JSON; nothing here streams.
  app.use('*', bodyLimit({ maxSize: 1 << 20, onError: (c) => c.json({ code: 413, message: 'request body too large (1 MiB at most)' }, 413) }));
  // Refused calls are audited too, but a flood of them must not fill the log (as on forkd's own API).
  const unauthenticatedAudit = new KeyedBuckets({ capacity: 60, perSecond: 1, maxKeys: 1 });

  // Who is calling, then one audit record per call (refusals too), as on forkd's own API.
  app.use('*', async (c, next) => {
    const t0 = performance.now();
    c.set('requestId', newRequestId());
    let who: Principal | undefined;
    let code = 'OK';
    let status: number | undefined;
    const codeOf = (err: unknown) => (err instanceof E2bApiError ? (err.status === 413 ? 'PAYLOAD_TOO_LARGE' : 'INVALID_ARGUMENT') : toForkdError(err).code);
    try {
      const source = sourceAddress(c);
      who = await control.keys.authenticate(presentedKey((n) => c.req.header(n), new URLSearchParams()), source);
      c.set('who', who);
      c.set('view', callerView(svc, control, who));
      // Its log lines and spans under its request id, as on forkd's own API.
      await withContext({ requestId: c.get('requestId') }, next);
      if (c.error) code = codeOf(c.error);
      else if (c.res.status >= 400) code = c.res.status === 404 ? 'NOT_FOUND' : c.res.status === 409 ? 'CONFLICT' : 'INVALID_ARGUMENT';
    } catch (err) {
      code = codeOf(err);
      status = err instanceof E2bApiError ? err.status : apiError(err, '').status;
      throw err;
    } finally {
      const route = c.req.routePath && c.req.routePath !== '*' ? c.req.routePath : c.req.path.slice(0, 200);
      const sandboxId = c.get('sandbox');
      if (who || unauthenticatedAudit.take('*')) await control.store.appendAudit({
        at: new Date().toISOString(),
        ...(who ? { keyId: who.keyId, tenant: who.tenant } : {}),
        ...(sandboxId ? { sandboxId } : {}),
        operation: `E2B ${c.req.method} ${route}`,
        code,
        status: status ?? c.res.status,
        durationMs: Math.round((performance.now() - t0) * 10) / 10,
        requestId: c.get('requestId'),
      });
    }
  });

  const create = (v2: boolean) => async (c: C) => {
    const req = await body(c, NewSandbox);
    const network = e2bCreateNetwork(req.network, req.allow_internet_access);
    // As E2B: traffic cannot wake a filesystem-only pause (its resume is a reboot).
    if (req.autoPause && req.autoPauseMemory === false && req.autoResume?.enabled) throw new E2bApiError(400, 'autoResume cannot be combined with autoPauseMemory: false (a filesystem-only pause is resumed by connect)');
    const view = c.get('view');
    // At least a second: forkd reads a lifetime of 0 as none.
    const timeout = Math.max(1, req.timeout ?? (v2 ? DEFAULT_TIMEOUT_S : 15));
    const attrs = attributesMetadata({
      autoResume: req.autoResume?.enabled === true,
      ...(req.templateID.startsWith('snap-') ? { templateID: req.templateID } : {}),
    });
    const metadata = { ...(req.metadata ?? {}), ...attrs };
    let s: SandboxInfo;
    if (req.templateID.startsWith('snap-')) {
      // A snapshot as the template: a fork of it (its files and processes), under its own lifetime,
      // with the caller's metadata (not the snapshot's) and envVars laid over the snapshot's env
      // (for the processes started from now on: the restored ones keep theirs).
      const [f] = await view.fork(req.templateID, 1, undefined, { metadata, ...(req.envVars ? { env: req.envVars } : {}) });
      if (!f) throw new ForkdError('INTERNAL', 'fork returned no sandbox');
      try {
        // The fork has its snapshot's network unless the create names one.
        if (network) await view.setNetwork(f.id, network);
        s = await view.setTimeout(f.id, timeout);
      } catch (err) {
        await view.delete(f.id).catch(() => {});
        throw err;
      }
    } else {
      s = await view.create({
        template: await e2bTemplateName(view, req.templateID),
        ...(req.envVars ? { env: req.envVars } : {}),
        metadata,
        timeoutSeconds: timeout,
        onTimeout: req.autoPause ? 'pause' : 'kill',
        // A filesystem-only pause at the timeout (the reconciler's backstop does the same).
        ...(req.autoPause && req.autoPauseMemory === false ? { timeoutPauseMemory: false } : {}),
        // E2B sandboxes live until their endAt: no idle hibernation under them.
        idleTimeoutSeconds: 0,
        ...(network ? { network } : {}),
      });
    }
    c.set('sandbox', s.id);
    lifetimes.schedule(s);
    return c.json(sandboxBody(s, reach(s.id)), 201);
  };
  app.post('/sandboxes', create(false));
  app.post('/v2/sandboxes', create(true));

  app.get('/v2/sandboxes', async (c) => {
    const f = parseListQuery(new URL(c.req.url).searchParams);
    const page = pageSandboxes(await c.get('view').list(), f);
    const headers: Record<string, string> = { 'x-total-running': String(page.totalRunning) };
    if (page.nextToken) headers['x-next-token'] = page.nextToken;
    return c.json(page.items.map(listedBody), 200, headers);
  });
  // v1 (older SDKs): running sandboxes, metadata filter, no paging.
  app.get('/sandboxes', async (c) => {
    const q = new URL(c.req.url).searchParams;
    const f = parseListQuery(new URLSearchParams({ state: 'running', ...(q.get('metadata') ? { metadata: q.get('metadata')! } : {}) }));
    return c.json(pageSandboxes(await c.get('view').list(), { ...f, limit: Number.MAX_SAFE_INTEGER }).items.map(listedBody));
  });

  app.get('/sandboxes/:sandboxID', async (c) => {
    const s = await visible(c.get('view'), sandboxParam(c));
    return c.json(detailBody(s, reach(s.id)));
  });

  app.delete('/sandboxes/:sandboxID', async (c) => {
    const id = sandboxParam(c);
    await visible(c.get('view'), id);
    lifetimes.cancel(id);
    streams.abortAll(id);
    await c.get('view').delete(id);
    return c.body(null, 204);
  });

  app.post('/sandboxes/:sandboxID/timeout', async (c) => {
    const id = sandboxParam(c);
    const { timeout } = await body(c, TimeoutBody);
    const view = c.get('view');
    // A paused sandbox answers 404: the oldest SDKs' connect falls through to /resume on it.
    if (e2bState(await visible(view, id)) !== 'running') throw new ForkdError('NOT_FOUND', `sandbox ${id} is paused`);
    lifetimes.schedule(await view.setTimeout(id, Math.max(1, timeout)));
    return c.body(null, 204);
  });

  app.get('/sandboxes/:sandboxID/metrics', async (c) => {
    const id = sandboxParam(c);
    const view = c.get('view');
    const s = await visible(view, id);
    const q = new URL(c.req.url).searchParams;
    return c.json(await metricSample(view, s, q.get('start'), q.get('end')));
  });

  app.post('/sandboxes/:sandboxID/pause', async (c) => {
    const id = sandboxParam(c);
    const req = await body(c, PauseBody, true);
    const view = c.get('view');
    const s = await visible(view, id);
    if (e2bState(s) === 'paused') return c.json({ code: 409, message: `sandbox ${id} is already paused` }, 409);
    lifetimes.cancel(id);
    streams.abortAll(id);
    // memory: false: filesystem-only, the next connect starts it cold.
    await view.pause(id, { memory: req.memory !== false });
    return c.body(null, 204);
  });

  /** connect: resumes a paused sandbox (201) or extends a running one's lifetime, never shortening it (200). */
  const connect = async (c: C, resumeOnly = false) => {
    const id = sandboxParam(c);
    const req = await body(c, ConnectBody, true);
    const view = c.get('view');
    let s = await visible(view, id);
    const timeout = Math.max(1, req.timeout ?? DEFAULT_TIMEOUT_S);
    const resumed = e2bState(s) === 'paused';
    if (resumed) {
      // memory: false (onResume: 'reboot'): a cold start from its files, whatever the pause kept.
      await view.resume(id, { memory: req.memory !== false });
      s = await view.setTimeout(id, timeout);
    } else if (resumeOnly) {
      return c.json({ code: 409, message: `sandbox ${id} is already running` }, 409);
    } else if (!s.expiresAt || Date.now() + timeout * 1000 > Date.parse(s.expiresAt)) {
      s = await view.setTimeout(id, timeout);
    }
    lifetimes.schedule(s);
    return c.json(sandboxBody(s, reach(s.id)), resumed ? 201 : 200);
  };
  app.post('/sandboxes/:sandboxID/connect', (c) => connect(c));
  app.post('/v2/sandboxes/:sandboxID/connect', (c) => connect(c));
  app.post('/sandboxes/:sandboxID/resume', (c) => connect(c, true));

  app.post('/sandboxes/:sandboxID/snapshots', async (c) => {
    const id = sandboxParam(c);
    const req = await body(c, SnapshotBody, true);
    const view = c.get('view');
    await visible(view, id);
    const snap = await view.snapshot(id, req.name ? { name: req.name } : {});
    return c.json({ snapshotID: snap.id, names: snap.name ? [snap.name] : [] }, 201);
  });

  app.get('/snapshots', async (c) => {
    const q = new URL(c.req.url).searchParams;
    const page = await listSnapshots(c.get('view'), q);
    return c.json(page.items, 200, page.nextToken ? { 'x-next-token': page.nextToken } : {});
  });

  // Template.exists / aliasExists: forkd templates the caller can see (shared ones are public); `alias:tag` is that tag's.
  app.get('/templates/aliases/:alias', async (c) => {
    const alias = c.req.param('alias');
    const view = c.get('view');
    const name = await e2bTemplateName(view, alias).catch(() => undefined);
    const t = (await view.templates()).find((x) => x.name === name);
    if (!t) throw new ForkdError('NOT_FOUND', `template ${alias} not found`);
    const owner = await control.store.owner('template', t.name);
    return c.json({ templateID: t.name, public: owner === undefined });
  });

  registerTemplateBuilds(app, ctx);

  app.delete('/templates/:templateID', async (c) => {
    const name = c.req.param('templateID');
    const view = c.get('view');
    if (name.startsWith('snap-')) await view.deleteSnapshot(name);
    else await view.deleteTemplate(name);
    return c.body(null, 204);
  });

  app.post('/sandboxes/:sandboxID/fork', async (c) => {
    const id = sandboxParam(c);
    const req = await body(c, ForkBody, true);
    const view = c.get('view');
    await visible(view, id);
    const forks = await view.fork(id, req.count ?? 1);
    const out: unknown[] = [];
    for (const f of forks) {
      const s = await view.setTimeout(f.id, Math.max(1, req.timeout ?? DEFAULT_TIMEOUT_S));
      lifetimes.schedule(s);
      out.push({ sandbox: sandboxBody(s, reach(s.id)) });
    }
    return c.json(out, 201);
  });

  app.put('/sandboxes/:sandboxID/network', async (c) => {
    const id = sandboxParam(c);
    const req = await body(c, NetworkConfig, true);
    const view = c.get('view');
    await visible(view, id);
    await view.setNetwork(id, e2bUpdateNetwork(req, (await view.get(id)).network));
    return c.body(null, 204);
  });

  return app;
}
