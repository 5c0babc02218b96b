import { randomUUID } from 'node:crypto';
import type { Hono } from 'hono';
import { bodyLimit } from 'hono/body-limit';
import { CONTEXT_MAX_BYTES, ForkdError } from '@forkd/protocol';
import type { TemplateBuildRecord } from '../../store/template-build-records.js';
import type { E2bContext } from './e2b-context.js';
import { E2bApiError } from './e2b-errors.js';
import { body, type C, type E2bEnv } from './e2b-request.js';
import { AssignTagsBody, E2bTemplateBody, RemoveTagsBody, RequestBuildBody } from './template-build-schemas.js';
import { publicMessage, runTemplateBuild, STALE_MS } from './template-build-runner.js';
import { checkTag, DEFAULT_TAG, e2bRefOf, forkdTemplateName, parseE2bRef } from './template-refs.js';
import { e2bDockerfile, type E2bBase } from './template-steps.js';
import { uploadsContext } from './upload-context.js';

/** Builds, their logs and uploads are forgotten a week after they last moved. */
const KEEP_MS = 7 * 86_400_000;
const UPLOAD_URL_TTL_S = 3600;
const HASH = /^[a-f0-9]{64}$/;
const LOG_PAGE = 1000;
/** What one tenant may have at once: builds requested or running, and bytes of uploads kept (a week). */
export const MAX_ACTIVE_BUILDS = 20;
export const MAX_UPLOAD_BYTES = 1024 * 1024 * 1024;
/** A requested build not started within this long was abandoned (its client went): it no longer counts. */
const WAITING_MS = 3600_000;

const tenantOf = (c: C) => c.get('who').tenant;

/** A build of the caller's tenant and of that template; anything else is simply not found. */
async function ownBuild(ctx: E2bContext, c: C): Promise<TemplateBuildRecord> {
  const b = await ctx.control.store.templateBuilds.templateBuild(c.req.param('buildID') ?? '');
  if (!b || b.tenant !== tenantOf(c) || b.template !== c.req.param('templateID')) throw new ForkdError('NOT_FOUND', `build ${c.req.param('buildID')} not found`);
  return b;
}

function hashParam(c: { req: { param(n: string): string | undefined } }): string {
  const h = c.req.param('hash') ?? '';
  if (!HASH.test(h)) throw new E2bApiError(400, 'a files hash is 64 lowercase hex digits');
  return h;
}

/** A build's tags: `alias:tag` names one, the request may add more; neither: the default tag. */
function buildTags(name: string, extra: readonly string[] | undefined): { alias: string; tags: string[] } {
  const ref = parseE2bRef(name);
  const tags = [...(name.includes(':') ? [ref.tag] : []), ...(extra ?? []).map(checkTag)];
  return { alias: ref.alias, tags: [...new Set(tags.length ? tags : [DEFAULT_TAG])] };
}

/**
 * The file upload E2B's SDK PUTs to the URL `GET .../files/{hash}` gave it,
 * without its API key: the URL's token names the tenant and hash, signed.
 * Registered before the API's key check and 1 MiB body limit.
 */
export function registerTemplateUploads(app: Hono<E2bEnv>, ctx: E2bContext): void {
  const limit = bodyLimit({ maxSize: CONTEXT_MAX_BYTES, onError: (c) => c.json({ code: 413, message: `an upload is ${CONTEXT_MAX_BYTES} bytes at most` }, 413) });
  app.put('/templates/:templateID/files/:hash/upload', limit, async (c) => {
    const hash = hashParam(c);
    const q = new URL(c.req.url).searchParams;
    const tenant = q.get('tenant') ?? '';
    if (!ctx.tokens.matchesUpload(tenant, hash, Number(q.get('expires')), q.get('token') ?? undefined)) return c.json({ code: 401, message: 'invalid or expired upload URL' }, 401);
    const data = Buffer.from(await c.req.arrayBuffer());
    if ((await ctx.control.store.templateBuilds.templateFileBytes(tenant)) + data.length > MAX_UPLOAD_BYTES) {
      return c.json({ code: 429, message: `this tenant's template uploads exceed ${MAX_UPLOAD_BYTES} bytes (kept a week)` }, 429);
    }
    await ctx.control.store.templateBuilds.putTemplateFile(tenant, hash, data, new Date().toISOString());
    await ctx.control.store.appendAudit({ at: new Date().toISOString(), tenant, operation: 'E2B PUT /templates/:templateID/files/:hash/upload', code: 'OK', status: 200, durationMs: 0, requestId: `upload-${hash.slice(0, 12)}` });
    return c.body(null, 200);
  });
}

/** E2B's template builder API (what the SDK's Template.build, exists and tags use) over the caller's tenant view. */
export function registerTemplateBuilds(app: Hono<E2bEnv>, ctx: E2bContext): void {
  const records = ctx.control.store.templateBuilds;

  app.post('/v3/templates', async (c) => {
    const req = await body(c, RequestBuildBody);
    const { alias, tags } = buildTags(req.name, req.tags);
    const target = forkdTemplateName({ alias, tag: tags[0]! });
    const owner = await ctx.control.store.owner('template', target);
    if (owner !== undefined && owner !== tenantOf(c)) throw new ForkdError('ALREADY_EXISTS', `template name ${alias} is taken`);
    const now = new Date().toISOString();
    await records.pruneTemplateBuilds(new Date(Date.now() - KEEP_MS).toISOString());
    const since = { waiting: new Date(Date.now() - WAITING_MS).toISOString(), building: new Date(Date.now() - STALE_MS).toISOString() };
    if ((await records.activeTemplateBuilds(tenantOf(c), since)) >= MAX_ACTIVE_BUILDS) throw new ForkdError('RESOURCE_EXHAUSTED', `${MAX_ACTIVE_BUILDS} template builds of this tenant are already requested or running`);
    const build: TemplateBuildRecord = { id: randomUUID(), tenant: tenantOf(c), template: alias, target, tags, status: 'waiting', createdAt: now, updatedAt: now };
    await records.putTemplateBuild(build);
    return c.json({ templateID: alias, buildID: build.id, public: false, aliases: [alias], names: [alias], tags }, 202);
  });

  app.get('/templates/:templateID/files/:hash', async (c) => {
    const hash = hashParam(c);
    const tenant = tenantOf(c);
    const expires = Math.floor(Date.now() / 1000) + UPLOAD_URL_TTL_S;
    const url = new URL(`/templates/${encodeURIComponent(c.req.param('templateID'))}/files/${hash}/upload`, new URL(c.req.url).origin);
    url.search = new URLSearchParams({ tenant, expires: String(expires), token: ctx.tokens.uploadToken(tenant, hash, expires) }).toString();
    return c.json({ present: await records.hasTemplateFile(tenant, hash), url: url.toString() });
  });

  app.post('/v2/templates/:templateID/builds/:buildID', async (c) => {
    const b = await ownBuild(ctx, c);
    const t = await body(c, E2bTemplateBody);
    if (!(await records.setTemplateBuildStatus(b.id, ['waiting'], 'building', undefined, new Date().toISOString()))) throw new ForkdError('FAILED_PRECONDITION', `build ${b.id} was already started`);
    try {
      const req = await buildRequest(ctx, c, b, t);
      void runTemplateBuild({
        view: c.get('view'),
        records,
        logger: ctx.logger,
        build: b,
        req: req.req,
        stepOf: req.stepOf,
        copies: b.tags.slice(1).map((tag) => forkdTemplateName({ alias: b.template, tag })),
        onReady: () => setTags(ctx, b),
      });
    } catch (err) {
      // Refused before any step ran: the runner's words for it, at the step the error names (if any).
      const step = err instanceof ForkdError ? (err.details as { step?: string } | undefined)?.step : undefined;
      await records.setTemplateBuildStatus(b.id, ['building'], 'error', { message: publicMessage(err), step }, new Date().toISOString());
      throw err;
    }
    // A JSON body: the SDK's client parses every answer but a 204.
    return c.json({}, 202);
  });

  app.get('/templates/:templateID/builds/:buildID/status', async (c) => {
    let b = await ownBuild(ctx, c);
    if (b.status === 'building' && Date.now() - Date.parse(b.updatedAt) > STALE_MS) {
      const reason = { message: 'the build was interrupted (its server stopped); build again' };
      await records.setTemplateBuildStatus(b.id, ['building'], 'error', reason, new Date().toISOString());
      b = (await records.templateBuild(b.id)) ?? b;
    }
    const q = new URL(c.req.url).searchParams;
    const offset = Math.max(0, Math.floor(Number(q.get('logsOffset') ?? 0)) || 0);
    const limit = Math.min(LOG_PAGE, Math.max(1, Math.floor(Number(q.get('limit') ?? LOG_PAGE)) || LOG_PAGE));
    const entries = await records.templateBuildLogs(b.id, offset, limit);
    return c.json({
      templateID: b.template,
      buildID: b.id,
      status: b.status,
      logEntries: entries,
      logs: entries.map((e) => `${e.timestamp} ${e.message}`),
      ...(b.reason ? { reason: { message: b.reason.message, ...(b.reason.step !== undefined ? { step: b.reason.step } : {}), logEntries: [] } } : {}),
    });
  });

  registerTagRoutes(app, ctx);
}

/** The Dockerfile, context and registry credentials of a started build; INVALID_ARGUMENT (with E2B's step) for what cannot be built. */
async function buildRequest(ctx: E2bContext, c: C, b: TemplateBuildRecord, t: E2bTemplateBody) {
  const reg = t.fromImageRegistry;
  if (reg && reg.type !== 'registry') throw new ForkdError('INVALID_ARGUMENT', `${reg.type === 'aws' ? 'AWS ECR' : 'GCP Artifact Registry'} credentials are not supported: use a registry user name and password`, { step: 'base' });
  const base: E2bBase = t.fromTemplate !== undefined ? { kind: 'template', name: forkdTemplateName(parseE2bRef(t.fromTemplate)) } : { kind: 'image', ref: t.fromImage! };
  const df = e2bDockerfile(t, base, b.id);
  const uploads = [];
  for (const [hash, dir] of df.uploads) {
    const data = await ctx.control.store.templateBuilds.templateFile(tenantOf(c), hash);
    if (!data) throw new ForkdError('INVALID_ARGUMENT', `the files of hash ${hash} were not uploaded`, { step: String(t.steps.findIndex((s) => s.filesHash === hash) + 1) });
    uploads.push({ dir, data });
  }
  const context = await uploadsContext(uploads);
  if (!context.ok) throw new ForkdError('INVALID_ARGUMENT', context.error);
  return {
    req: { name: b.target, dockerfile: df.dockerfile, context: context.value, ...(t.readyCmd ? { ready: t.readyCmd } : {}), ...(reg?.type === 'registry' ? { registryAuth: { username: reg.username, password: reg.password } } : {}) },
    stepOf: df.stepOf,
  };
}

/** Points each of a ready build's tags at it. */
async function setTags(ctx: E2bContext, b: TemplateBuildRecord): Promise<void> {
  const at = new Date().toISOString();
  for (const tag of b.tags) await ctx.control.store.templateBuilds.setTemplateTag({ template: b.template, tag, tenant: b.tenant, buildId: b.id, createdAt: at });
}

/** The caller's forkd templates of an E2B alias (its default tag's and `alias--tag` ones). */
async function aliasTemplates(c: C, alias: string) {
  return (await c.get('view').templates()).filter((t) => e2bRefOf(t.name).alias === alias);
}

function registerTagRoutes(app: Hono<E2bEnv>, ctx: E2bContext): void {
  const records = ctx.control.store.templateBuilds;

  app.post('/templates/tags', async (c) => {
    const req = await body(c, AssignTagsBody);
    const src = parseE2bRef(req.target);
    const tags = [...new Set(req.tags.map(checkTag))];
    const from = forkdTemplateName(src);
    if (!(await c.get('view').templates()).some((t) => t.name === from)) throw new ForkdError('NOT_FOUND', `template ${req.target} not found`);
    const buildId = (await records.templateTags(src.alias)).find((t) => t.tag === src.tag)?.buildId ?? randomUUID();
    for (const tag of tags) {
      const name = forkdTemplateName({ alias: src.alias, tag });
      if (name !== from) await c.get('view').buildTemplate({ name, from, copy: true, setup: [] }, () => {});
      await records.setTemplateTag({ template: src.alias, tag, tenant: tenantOf(c), buildId, createdAt: new Date().toISOString() });
    }
    return c.json({ buildID: buildId, tags }, 201);
  });

  app.delete('/templates/tags', async (c) => {
    const req = await body(c, RemoveTagsBody);
    const { alias } = parseE2bRef(req.name);
    const tags = [...new Set(req.tags.map(checkTag))];
    const own = new Set((await aliasTemplates(c, alias)).map((t) => t.name));
    if (own.size === 0) throw new ForkdError('NOT_FOUND', `template ${alias} not found`);
    for (const tag of tags) {
      const name = forkdTemplateName({ alias, tag });
      if (own.has(name)) await c.get('view').deleteTemplate(name);
    }
    await records.dropTemplateTags(alias, tags);
    return c.body(null, 204);
  });

  app.get('/templates/:templateID/tags', async (c) => {
    const alias = c.req.param('templateID');
    const mine = await aliasTemplates(c, alias);
    if (mine.length === 0) throw new ForkdError('NOT_FOUND', `template ${alias} not found`);
    const rows = new Map((await records.templateTags(alias)).map((t) => [t.tag, t]));
    return c.json(
      mine.map((t) => {
        const tag = e2bRefOf(t.name).tag;
        return { tag, buildID: rows.get(tag)?.buildId ?? t.id, createdAt: t.createdAt };
      }),
    );
  });
}
