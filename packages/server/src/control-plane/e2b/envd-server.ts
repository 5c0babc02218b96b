import { headerOf, requestUrl } from '../http/raw-http.js';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ForkdError, toForkdError, type SandboxInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { DEFAULT_TENANT } from '../auth/api-keys.js';
import { callerView } from '../http/caller-view.js';
import { logRequestError, newRequestId } from '../http/public-error.js';
import { currentContext, withContext } from '../../shared/request-context.js';
import { signingRefusal } from './access-tokens.js';
import { connectTimeoutMs, jsonPayload, keepaliveMs, streamRequestMessage } from './connect-framing.js';
import type { EnvdCall, RpcService } from './envd-call.js';
import { checkUser, requestUser } from './envd-paths.js';
import { routeEnvd } from './envd-router.js';
import type { E2bContext } from './e2b-context.js';
import { CONNECT_STATUS, ENVD_UNAUTHORIZED, RpcError, rpcError, sandboxNotFoundBody } from './e2b-errors.js';
import { download, filesFailure, sendJson, upload } from './files-http.js';
import { filesystemService } from './filesystem-service.js';
import { processService } from './process-service.js';
import { RpcStream } from './rpc-stream.js';
import { streamInput } from './stream-input.js';
import { e2bAttributes } from './sandbox-mapping.js';
import { destroyQuietly, guardListener } from '../../shared/connection-guard.js';

const SERVICES: Record<string, RpcService> = { 'process.Process': processService, 'filesystem.Filesystem': filesystemService };
const MAX_RPC_BODY = 16 * 1024 * 1024;

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const parts: Buffer[] = [];
  let n = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    n += c.length;
    if (n > MAX_RPC_BODY) throw new RpcError('resource_exhausted', 'request message too large');
    parts.push(c);
  }
  return Buffer.concat(parts);
}


/** The node as the sandbox's owner sees it: the same tenant view and limits a key of that tenant would get. */
async function ownerCallView(ctx: E2bContext, id: string): Promise<{ view: NodeService; tenant: string | undefined }> {
  const owner = await ctx.control.store.owner('sandbox', id);
  const who = { keyId: 'e2b-envd-token', tenant: owner ?? DEFAULT_TENANT, admin: owner === undefined };
  return { view: callerView(ctx.svc, ctx.control, who), tenant: owner };
}

/** An envd request, for the sandbox `hostId` when its host name said which (`49983-{id}.{domain}`), else routed by envd-router.ts. */
export type EnvdListener = (req: IncomingMessage, res: ServerResponse, hostId?: string) => void;

/**
 * The envd gateway: every sandbox's envd API on one port, routed by headers
 * (envd-router.ts) or by host name, answering 502 with the reference proxy's body for a
 * sandbox that is unknown, gone or paused (waking it instead when its
 * autoResume is on and its pause kept memory).
 */
export function createEnvdHandler(ctx: E2bContext): EnvdListener {
  const { svc, tokens, logger, control } = ctx;

  const handle = async (req: IncomingMessage, res: ServerResponse, hostId: string | undefined) => {
    const t0 = performance.now();
    const requestId = currentContext()?.requestId ?? newRequestId();
    const url = requestUrl(req, 'http://envd');
    if (!url) return sendJson(res, 400, { code: 400, message: 'malformed request target' });
    const { id } = hostId !== undefined ? { id: hostId } : await routeEnvd(svc, tokens, req, url);
    const notFound = () => sendJson(res, 502, sandboxNotFoundBody(id ?? ''));
    if (!id) return notFound();
    let s: SandboxInfo;
    try {
      s = await svc.get(id);
    } catch {
      return notFound();
    }
    const token = tokens.token(id);
    const headerToken = headerOf(req, 'x-access-token');
    const isFiles = url.pathname === '/files';
    // Checked before anything else happens to the sandbox: a request that would be refused wakes nothing.
    const refused = isFiles
      ? signingRefusal(
          { path: url.searchParams.get('path') ?? '', username: url.searchParams.get('username') ?? undefined, signature: url.searchParams.get('signature') ?? undefined, expiration: url.searchParams.get('signature_expiration') ?? undefined },
          req.method === 'POST' ? 'write' : 'read',
          token,
          headerToken,
        )
      : tokens.matches(id, headerToken)
        ? undefined
        : ENVD_UNAUTHORIZED;
    // As in E2B, traffic never wakes a filesystem-only pause (its resume is a reboot): connect does.
    if (s.state === 'paused' && !refused && s.pausedMemory !== false && e2bAttributes(s)?.autoResume) {
      const { view } = await ownerCallView(ctx, id);
      s = await view.resume(id).catch(() => s);
      ctx.lifetimes.schedule(s);
    }
    if (s.state !== 'running') return notFound();
    // /health needs no token (the SDK's isRunning() of a killed sandbox must read 502, not 401).
    if (url.pathname === '/health' && req.method === 'GET') {
      res.writeHead(204).end();
      return;
    }
    if (refused) return sendJson(res, 401, { code: 401, message: refused });

    const { view, tenant } = await ownerCallView(ctx, id);
    const call: EnvdCall = { id, view, user: 'user', requestId, streams: ctx.streams };
    let status = 200;
    let code = 'OK';
    try {
      if (isFiles) {
        try {
          call.user = checkUser(url.searchParams.get('username') ?? undefined);
          if (req.method === 'GET') await download(call, url.searchParams, res);
          else if (req.method === 'POST') await upload(call, url.searchParams, req, res);
          else sendJson(res, (status = 405), { code: 405, message: 'method not allowed' });
        } catch (err) {
          const f = filesFailure(err, requestId);
          status = f.status;
          code = toForkdError(err).code;
          if (status >= 500) logRequestError(logger, err, { requestId, path: url.pathname, surface: 'e2b-envd' });
          if (!res.headersSent) sendJson(res, f.status, { code: f.status, message: f.message });
          else res.destroy();
        }
        return;
      }
      const m = /^\/([a-z]+\.[A-Za-z]+)\/([A-Za-z]+)$/.exec(url.pathname);
      const service = m ? SERVICES[m[1]!] : undefined;
      const method = m?.[2] ?? '';
      if (req.method !== 'POST' || !service) {
        status = 404;
        code = 'NOT_FOUND';
        return sendJson(res, 404, { code: 404, message: `no route ${req.method} ${url.pathname}` });
      }
      if (service === processService && method === 'StreamInput') {
        await streamInput(call, req, res);
        return;
      }
      const stream = service.streams[method];
      const unary = service.unary[method];
      const ct = (headerOf(req, 'content-type') ?? '').toLowerCase();
      if (stream) {
        const rs = new RpcStream(res, stream.keepalive, keepaliveMs(headerOf(req, 'keepalive-ping-interval')));
        try {
          call.user = requestUser(headerOf(req, 'authorization'));
          if (!ct.startsWith('application/connect+json')) throw new RpcError('invalid_argument', `unsupported content type ${ct} (the JSON codec: application/connect+json)`);
          const msg = streamRequestMessage(await readBody(req));
          if (!msg.ok) throw new RpcError('invalid_argument', `malformed request message: ${msg.error}`);
          await stream.method(call, msg.value, rs, connectTimeoutMs(headerOf(req, 'connect-timeout-ms')));
        } catch (err) {
          const e = rpcError(err, requestId);
          code = e.code;
          rs.end(e);
        }
        return;
      }
      if (!unary) {
        status = 501;
        code = 'NOT_IMPLEMENTED';
        return sendJson(res, 501, { code: 'unimplemented', message: `${m![1]}/${method} is not implemented` });
      }
      try {
        call.user = requestUser(headerOf(req, 'authorization'));
        if (!ct.startsWith('application/json')) throw new RpcError('invalid_argument', `unsupported content type ${ct} (the JSON codec: application/json)`);
        const msg = jsonPayload(await readBody(req));
        if (!msg.ok) throw new RpcError('invalid_argument', 'the request message is not valid JSON');
        const out = await unary(call, msg.value);
        sendJson(res, 200, out);
      } catch (err) {
        const e = rpcError(err, requestId);
        if (!(err instanceof RpcError) && toForkdError(err).status >= 500) logRequestError(logger, err, { requestId, path: url.pathname, surface: 'e2b-envd' });
        status = CONNECT_STATUS[e.code];
        code = e.code;
        sendJson(res, status, e);
      }
    } finally {
      await control.store.appendAudit({
        at: new Date().toISOString(),
        keyId: 'e2b-envd-token',
        ...(tenant ? { tenant } : {}),
        sandboxId: id,
        operation: `E2B envd ${req.method} ${url.pathname}`,
        ...(call.target ? { target: call.target.slice(0, 1000) } : {}),
        code,
        status,
        durationMs: Math.round((performance.now() - t0) * 10) / 10,
        requestId,
      }).catch(() => {});
    }
  };

  // A failure of the request is its 500; one that escapes even that ends only this connection (guarded).
  return (req, res, hostId) =>
    guardListener('envd', () => destroyQuietly(req.socket), async () => {
      const requestId = newRequestId();
      try {
        // Its log lines and spans under its request id, as on forkd's own API.
        await withContext({ requestId }, () => handle(req, res, hostId));
      } catch (err) {
        logRequestError(logger, err instanceof ForkdError ? err : toForkdError(err), { requestId, path: req.url, surface: 'e2b-envd' });
        if (!res.headersSent) sendJson(res, 500, { code: 500, message: 'internal error' });
        else res.destroy();
      }
    })();
}
