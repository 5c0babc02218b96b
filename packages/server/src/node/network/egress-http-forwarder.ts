import { Agent as HttpAgent, createServer, request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { rootCertificates, TLSSocket, type SecureContext } from 'node:tls';
import type { EgressInterceptor } from './egress-interceptor.js';
import type { EgressSandbox } from './egress-policy.js';
import { HOP_BY_HOP, replyHead } from './upstream-reply.js';
import { nameOfAuthority } from './http-head.js';
import { destroyQuietly, guardListener } from '../../shared/connection-guard.js';

/** Where one request goes: the address the proxy checked for its name, or why it may not. */
export type Route = { addr: string } | { why: string };

export interface ForwarderOptions {
  interceptor: EgressInterceptor | undefined;
  /** Extra CAs (PEM) the real hosts' certificates may chain to, besides the system's (tests). */
  extraCa: string | undefined;
  /** The checks of one name on a port (rules, resolution, addresses) for a sandbox. */
  route(sb: EgressSandbox, name: string, port: number): Promise<Route>;
  /** The upstreams' ports (tests: unprivileged ones); 80 and 443 by default. */
  ports?: { http: number; tls: number };
}

/** What Node's client would refuse in a request path (it throws ERR_UNESCAPED_CHARACTERS). */
const BAD_PATH = /[^\x21-\xff]/;

/**
 * The proxy's HTTP path: requests are parsed (keep-alive, streaming bodies:
 * Node's HTTP server), each one's Host checked again (a kept-alive
 * connection cannot switch to another name), the interceptor's headers set,
 * and forwarded to the checked address — over TLS, verified against the
 * name, when the sandbox's TLS was terminated here.
 */
export class EgressHttpForwarder {
  readonly #o: ForwarderOptions;
  readonly #server = createServer({ requestTimeout: 0, headersTimeout: 30_000, keepAliveTimeout: 30_000 });
  readonly #httpAgent = new HttpAgent({ keepAlive: true, maxSockets: 256 });
  readonly #httpsAgent: HttpsAgent;

  constructor(o: ForwarderOptions) {
    this.#o = o;
    this.#httpsAgent = new HttpsAgent({ keepAlive: true, maxSockets: 256, ...(o.extraCa ? { ca: [...rootCertificates, o.extraCa] } : {}) });
    // A throw in a request's handling ends that connection only (counted), never the process.
    this.#server.on('request', (req: IncomingMessage, res: ServerResponse) => guardListener('egress-forwarder', () => destroyQuietly(req.socket), () => this.#forward(req, res))());
    this.#server.on('clientError', (_e, s: Socket) => destroyQuietly(s));
  }

  /** Serves a plain HTTP connection whose first bytes (`head`) the proxy already read. */
  serveHttp(sb: EgressSandbox, s: Socket, head: Buffer): void {
    tag(s, sb, false);
    s.unshift(head);
    this.#server.emit('connection', s);
    s.resume();
  }

  /** Terminates a TLS connection (its ClientHello in `head`) with `ctx`, then serves it as HTTP. */
  serveTls(sb: EgressSandbox, s: Socket, head: Buffer, ctx: SecureContext, sni: string): void {
    s.unshift(head);
    const t = new TLSSocket(s, { isServer: true, secureContext: ctx, ALPNProtocols: ['http/1.1'] });
    t.on('error', () => s.destroy());
    tag(t, sb, true, sni);
    this.#server.emit('connection', t);
  }

  close(): void {
    this.#httpAgent.destroy();
    this.#httpsAgent.destroy();
  }

  async #forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const meta = tagOf(req.socket);
    if (!meta) return void res.destroy();
    // A response's 'error' (a write after the sandbox went away) with no listener would be thrown.
    res.on('error', () => destroyQuietly(res));
    const host = nameOfAuthority(req.headers.host ?? '');
    const name = host.kind === 'name' ? host.name : '';
    const refuse = (code: number, why: string) => answer(req, res, code, why);
    // Over terminated TLS the name is the SNI's: a request may not name another host.
    if (meta.tls && name !== meta.sni) return refuse(421, `${name || 'no host'} is not ${meta.sni}`);
    if (!name) return refuse(400, 'no valid Host header');
    if (BAD_PATH.test(req.url ?? '/')) return refuse(400, 'request target with characters that must be escaped');
    const ports = this.#o.ports ?? { http: 80, tls: 443 };
    const port = meta.tls ? ports.tls : ports.http;
    const r = await this.#o.route(meta.sb, name, port);
    if ('why' in r) return refuse(403, r.why);
    const headers: OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (v !== undefined && !HOP_BY_HOP.includes(k)) headers[k] = v;
    // Grants are per service port (80/443), whatever port a test's upstream listens on.
    const out = { host: name, port: meta.tls ? 443 : 80, method: req.method ?? 'GET', path: req.url ?? '/', tls: meta.tls, headers: req.headers };
    for (const [k, v] of this.#o.interceptor?.headers(meta.sb.sandboxId, out) ?? []) headers[k.toLowerCase()] = v;
    const opts = { host: r.addr, port, method: req.method, path: req.url, headers };
    const up = meta.tls ? httpsRequest({ ...opts, servername: name, agent: this.#httpsAgent }) : httpRequest({ ...opts, agent: this.#httpAgent });
    const close = () => {
      destroyQuietly(up);
      destroyQuietly(res);
    };
    up.on('response', guardListener('egress-forwarder', close, (ur: IncomingMessage) => {
      ur.on('error', () => destroyQuietly(res));
      const head = replyHead(ur.statusCode, ur.statusMessage, ur.headers);
      if (!head.ok) {
        destroyQuietly(ur);
        return refuse(502, `${name}: bad reply (${head.why})`);
      }
      res.writeHead(head.status, head.message, head.headers);
      ur.pipe(res);
    }));
    up.on('error', guardListener('egress-forwarder', close, () => (res.headersSent ? destroyQuietly(res) : refuse(502, `${name}: upstream failed`))));
    res.on('close', () => destroyQuietly(up));
    req.pipe(up);
  }
}

/**
 * Answers the forwarder's own reply (a refusal, a 502) once the request's
 * body is read: a client still sending it would see a reset instead.
 */
function answer(req: IncomingMessage, res: ServerResponse, code: number, why: string): void {
  if (res.headersSent || res.destroyed) return void destroyQuietly(res);
  const send = () => {
    if (res.headersSent || res.destroyed) return;
    res.writeHead(code, { 'content-type': 'text/plain', connection: 'close' }).end(`forkd: ${why}\n`);
  };
  if (req.complete || req.readableEnded) return send();
  req.resume();
  req.once('end', guardListener('egress-forwarder', () => destroyQuietly(res), send));
}

interface Tag {
  sb: EgressSandbox;
  tls: boolean;
  sni?: string;
}
const tags = new WeakMap<object, Tag>();

function tag(s: Socket, sb: EgressSandbox, tls: boolean, sni?: string): void {
  tags.set(s, { sb, tls, ...(sni ? { sni } : {}) });
}

function tagOf(s: Socket): Tag | undefined {
  return tags.get(s);
}
