import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Readable, type Duplex } from 'node:stream';
import { ForkdError, SANDBOX_ID_SOURCE, type ErrorBody } from '@forkd/protocol';
import type { NodeService, PortConnection } from '../../node-contract/index.js';
import { presentedKey } from '../auth/api-keys.js';
import { proxyTokenMatches } from '../auth/proxy-tokens.js';
import type { ControlPlane } from '../control-plane.js';
import { headerOf, refuseUpgrade } from './raw-http.js';
import type { Logger } from '../../shared/logger.js';
import { ownerView } from './caller-view.js';
import { destroyQuietly, guardListener } from '../../shared/connection-guard.js';
import { closeWhenHalfClosed } from '../../shared/half-closed.js';
import { endSpan, profiling } from '../../shared/profile.js';

export interface ProxyTarget {
  id: string;
  port: number;
  /** Path and query as the server inside the sandbox sees them. */
  path: string;
}

const PATH = new RegExp(`^/sandboxes/(${SANDBOX_ID_SOURCE})/ports/(\\d{1,5})(/[^?]*)?(\\?.*)?$`);
const TOKEN_HEADER = 'x-forkd-token';
const TOKEN_PARAM = 'forkd_token';
const E2B_ACCESS_HEADER = 'x-access-token';
const E2B_TRAFFIC_HEADER = 'e2b-traffic-access-token';
/** Hop-by-hop headers (RFC 9110 §7.6.1) and forkd's own credentials never cross the proxy. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization', 'proxy-authenticate', TOKEN_HEADER]);

function escapeRe(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The sandbox and port a host name `{port}-{id}.{domain}` (any case, any port after it) names; undefined for any other name. */
export function hostTarget(host: string | undefined, domain: string | undefined): { port: number; id: string } | undefined {
  const m = domain && host ? new RegExp(`^(\\d{1,5})-(${SANDBOX_ID_SOURCE})\\.${escapeRe(domain)}\\.?(?::\\d+)?$`, 'i').exec(host) : null;
  return m ? { port: Number(m[1]), id: m[2]!.toLowerCase() } : undefined;
}

/**
 * `/sandboxes/{id}/ports/{port}/...` on any host, or every path on
 * `{port}-{id}.{domain}` when a proxy domain is configured.
 */
export function proxyTarget(host: string | undefined, url: string, domain: string | undefined): ProxyTarget | undefined {
  let t: ProxyTarget | undefined;
  const byHost = hostTarget(host, domain);
  if (byHost) t = { ...byHost, path: url || '/' };
  else {
    const m = PATH.exec(url);
    if (!m) return undefined;
    t = { id: m[1]!, port: Number(m[2]), path: `${m[3] ?? '/'}${m[4] ?? ''}` };
  }
  if (t.port < 1 || t.port > 65535) throw new ForkdError('INVALID_ARGUMENT', `port ${t.port} is out of range (1-65535)`);
  return t;
}

/** Drops forkd's token from the query the sandbox sees. */
function stripTokenParam(path: string): string {
  const q = path.indexOf('?');
  if (q < 0) return path;
  const params = new URLSearchParams(path.slice(q + 1));
  if (!params.has(TOKEN_PARAM)) return path;
  params.delete(TOKEN_PARAM);
  const rest = params.toString();
  return path.slice(0, q) + (rest ? `?${rest}` : '');
}

/** What authorised a proxied request: the headers that carried forkd's credentials (never forwarded to the sandbox). */
export interface ProxyAuthorization {
  strip: readonly string[];
}

/**
 * The sandbox's E2B tokens: its envd access token (`X-Access-Token`, which
 * already runs anything in it) or its traffic token (`E2B-Traffic-Access-Token`),
 * as E2B's code interpreter and `getHost()` users send them.
 */
function e2bCredential(control: ControlPlane, id: string, header: (name: string) => string | undefined): boolean {
  const tokens = control.e2bTokens;
  if (!tokens) return false;
  return tokens.matches(id, header(E2B_ACCESS_HEADER)) || tokens.matchesTraffic(id, header(E2B_TRAFFIC_HEADER));
}

/**
 * The sandbox's own proxy token, its E2B tokens, or an API key of the tenant
 * that owns it. What carried the credential is not forwarded: an API key must
 * never reach the sandbox.
 */
export async function authorizeProxy(control: ControlPlane, t: ProxyTarget, header: (name: string) => string | undefined, source?: string): Promise<ProxyAuthorization> {
  const q = t.path.includes('?') ? new URLSearchParams(t.path.slice(t.path.indexOf('?') + 1)) : new URLSearchParams();
  const token = header(TOKEN_HEADER) ?? q.get(TOKEN_PARAM) ?? undefined;
  // Wrong tokens spend the same per-source budget as wrong keys.
  const refuse = (why: string) => {
    if (source !== undefined) control.keys.throttle.failed(source);
    return new ForkdError('UNAUTHENTICATED', why);
  };
  if (source !== undefined && (token || header(E2B_ACCESS_HEADER) || header(E2B_TRAFFIC_HEADER))) control.keys.throttle.check(source);
  if (token) {
    if (!(await proxyTokenMatches(control.store, t.id, token))) throw refuse(`invalid proxy token for sandbox ${t.id}`);
    return { strip: [] };
  }
  if (e2bCredential(control, t.id, header)) return { strip: [E2B_ACCESS_HEADER, E2B_TRAFFIC_HEADER] };
  const key = presentedKey(header, new URLSearchParams());
  if (!key) {
    if (header(E2B_ACCESS_HEADER) || header(E2B_TRAFFIC_HEADER)) throw refuse(`invalid access token for sandbox ${t.id}`);
    throw new ForkdError('UNAUTHENTICATED', `the port proxy needs the sandbox's token (${TOKEN_HEADER} header or ?${TOKEN_PARAM}=), its E2B access token or an API key`);
  }
  const who = await control.keys.authenticate(key, source);
  // A sandbox with no owner is an admin's alone (see TenantView).
  const owner = await control.store.owner('sandbox', t.id);
  if (owner === undefined ? !who.admin : owner !== who.tenant) throw new ForkdError('NOT_FOUND', `sandbox ${t.id} not found`);
  return { strip: ['authorization', 'x-api-key'] };
}

function forwardHeaders(raw: readonly string[], strip: readonly string[], extra: Record<string, string>): [string, string][] {
  const out: [string, string][] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const k = raw[i]!.toLowerCase();
    if (HOP.has(k) || strip.includes(k)) continue;
    out.push([raw[i]!, raw[i + 1]!]);
  }
  for (const [k, v] of Object.entries(extra)) out.push([k, v]);
  return out;
}

async function failure(conn: PortConnection, t: ProxyTarget, err: unknown): Promise<ForkdError> {
  const d = await Promise.race([conn.done, new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000))]);
  if (d?.refused) return new ForkdError('UNAVAILABLE', `nothing listens on port ${t.port} in sandbox ${t.id}`);
  // The dialer's own words (namespace paths) are for the log, not the message.
  return new ForkdError('UNAVAILABLE', `proxy connection to port ${t.port} of ${t.id} failed`, { cause: d?.error ?? (err as Error).message });
}

/** Statuses whose replies carry no content (Fetch's "null body status" minus 101, which is an upgrade). */
const NO_CONTENT = new Set([204, 205, 304]);

/** The sandbox server's reply as forkd's answer; throws when HTTP cannot carry it on. */
function passOn(req: IncomingMessage, res: IncomingMessage): Response {
  const status = res.statusCode ?? 0;
  if (status < 200 || status > 599) throw new Error(`status ${status} is outside 200-599`);
  const declaresContent = res.headers['transfer-encoding'] !== undefined || (res.headers['content-length'] !== undefined && res.headers['content-length'] !== '0');
  // 304's content-length describes the representation, not this reply; 204 and 205 may have none.
  if (status !== 304 && NO_CONTENT.has(status) && declaresContent) throw new Error(`status ${status} with content`);
  const h = new Headers();
  for (const [k, v] of forwardHeaders(res.rawHeaders, [], {})) h.append(k, v);
  const empty = req.method === 'HEAD' || NO_CONTENT.has(status);
  if (empty) res.resume();
  return new Response(empty ? null : (Readable.toWeb(res) as ReadableStream<Uint8Array>), { status, headers: h });
}

/**
 * forkd's answer to a sandbox server's reply it cannot pass on: 502 (the
 * gateway's status) with forkd's error body, code UNAVAILABLE.
 */
function badGateway(t: ProxyTarget, err: unknown): Response {
  const fe = new ForkdError('UNAVAILABLE', `the server on port ${t.port} of ${t.id} answered what HTTP cannot pass on (${(err as Error).message})`);
  const body: ErrorBody = { error: { code: fe.code, message: fe.message } };
  return new Response(JSON.stringify(body), { status: 502, headers: { 'content-type': 'application/json' } });
}

/**
 * One HTTP request through the proxy; the answer streams back as it comes.
 * `outgoing` (the client's response): the sandbox's connection is closed with
 * it, so a client gone before the answer began, whose answer nobody will
 * read, holds no connection (nor its slot) however the sandbox's server
 * behaves.
 */
export async function proxyHttp(svc: NodeService, control: ControlPlane, t: ProxyTarget, req: IncomingMessage, outgoing?: ServerResponse): Promise<Response> {
  const t0 = profiling() ? performance.now() : 0;
  const { strip } = await authorizeProxy(control, t, (n) => headerOf(req, n), req.socket.remoteAddress);
  const t1 = t0 && performance.now();
  if (t0) endSpan('port proxy: authorize', t0);
  const conn = await (await ownerView(svc, control, t.id)).connectPort(t.id, t.port);
  const t2 = t0 && performance.now();
  if (t0) endSpan('port proxy: connectPort', t1);
  outgoing?.once('close', () => conn.close());
  if (req.socket.destroyed) conn.close();
  const headers = forwardHeaders(req.rawHeaders, strip, { 'x-forwarded-for': req.socket.remoteAddress ?? '', 'x-forwarded-host': req.headers.host ?? '' });
  return new Promise<Response>((resolve, reject) => {
    // No agent: createConnection is only used then. One connection per request.
    const out = http.request({ method: req.method, path: stripTokenParam(t.path), headers: [...headers, ['connection', 'close']].flat(), createConnection: () => conn.stream as unknown as Socket }, (res) => {
      if (t0) endSpan("port proxy: request sent, sandbox server's reply head", t2);
      res.on('close', () => conn.close());
      // Anything thrown here is outside every handler and would end the daemon:
      // a reply that cannot be passed on becomes the proxy's own 502.
      try {
        resolve(passOn(req, res));
      } catch (err) {
        res.destroy();
        conn.close();
        resolve(badGateway(t, err));
      }
    });
    out.on('error', (err) => {
      conn.close();
      void failure(conn, t, err).then(reject);
    });
    // The client's side failing ends the sandbox's too (and is no throw of an unheard 'error').
    req.on('error', () => conn.close());
    conn.stream.on('error', () => conn.close());
    req.pipe(out);
  });
}

/** WebSocket (any upgrade) through the proxy: the request head is replayed, then bytes flow both ways. */
export async function proxyUpgrade(svc: NodeService, control: ControlPlane, t: ProxyTarget, req: IncomingMessage, socket: Duplex, head: Buffer, logger?: Logger): Promise<void> {
  let conn: PortConnection;
  let strip: readonly string[];
  try {
    ({ strip } = await authorizeProxy(control, t, (n) => headerOf(req, n), req.socket.remoteAddress));
    conn = await (await ownerView(svc, control, t.id)).connectPort(t.id, t.port);
  } catch (err) {
    refuseUpgrade(socket, err, logger, req.url);
    return;
  }
  // A client gone while the connection was being made: its 'close' came before anyone listened.
  if (socket.destroyed) return conn.close();
  const lines = [`${req.method} ${stripTokenParam(t.path)} HTTP/1.1`];
  // Upgrade and Connection are hop-by-hop but are the point here.
  for (const [k, v] of forwardHeaders(req.rawHeaders, strip, { connection: 'Upgrade', upgrade: headerOf(req, 'upgrade') ?? 'websocket' })) lines.push(`${k}: ${v}`);
  const close = () => {
    conn.close();
    destroyQuietly(socket);
  };
  socket.on('error', guardListener('port-proxy', close, close));
  conn.stream.on('error', guardListener('port-proxy', close, close));
  socket.on('close', guardListener('port-proxy', close, () => conn.close()));
  closeWhenHalfClosed(socket, 'port-proxy', close);
  conn.stream.write(`${lines.join('\r\n')}\r\n\r\n`);
  if (head.length) conn.stream.write(head);
  socket.pipe(conn.stream);
  conn.stream.pipe(socket);
  void conn.done.then(() => destroyQuietly(socket), () => destroyQuietly(socket));
}
