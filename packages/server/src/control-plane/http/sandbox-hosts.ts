import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { TLSSocket } from 'node:tls';
import { ForkdError } from '@forkd/protocol';
import { serveHttp, type RunningServer, type TlsFiles } from '../../shared/http-server.js';
import type { E2bListeners } from '../e2b/e2b-servers.js';
import { hostTarget } from './port-proxy.js';
import { errorBody, newRequestId, REQUEST_ID_HEADER } from './public-error.js';
import { headerOf } from './raw-http.js';
import type { ApiHandlers, UpgradeHandler } from './server.js';

/** E2B's envd port: `49983-{id}.{domain}` is forkd's envd gateway for that sandbox, not a port inside it. */
export const ENVD_PORT = 49983;

export interface SandboxHostsDeps {
  /** FORKD_PROXY_DOMAIN: the certificate is for `*.{domain}`. */
  domain: string;
  /** forkd's API handlers: their port proxy serves `{port}-{id}.{domain}`. */
  api: ApiHandlers;
  /** E2B's API (`api.{domain}`) and envd (`49983-{id}.{domain}`), when served. */
  e2b: E2bListeners;
}

type Route = { kind: 'sandbox'; id: string; port: number } | { kind: 'e2b-api' };

/** The Host header's name: lowercased, without port or trailing dot; undefined when absent. */
function hostName(host: string | undefined): string | undefined {
  if (!host) return undefined;
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.replace(/:\d*$/, '');
  return name.toLowerCase().replace(/\.$/, '');
}

/**
 * Where a request on the sandbox hosts' listener goes, or why it is refused.
 * A request must name the host its TLS connection was opened for (SNI):
 * otherwise one connection, opened for one sandbox's name, would carry
 * requests to another's. E2B's routing headers, when sent, must agree too.
 */
export function routeSandboxHost(req: IncomingMessage, d: SandboxHostsDeps): Route | { refused: string } {
  const name = hostName(req.headers.host);
  const sni = (req.socket as TLSSocket).servername;
  if (!name) return { refused: 'the request names no host' };
  if (!sni) return { refused: `the TLS connection named no server (SNI); connect to ${name} by name` };
  if (sni.toLowerCase().replace(/\.$/, '') !== name) return { refused: `the request is for ${name}, its TLS connection for ${sni}` };
  const t = hostTarget(name, d.domain);
  if (!t) return name === `api.${d.domain}` && d.e2b.api ? { kind: 'e2b-api' } : { refused: `${name} is not served here` };
  const byHeader = headerOf(req, 'e2b-sandbox-id');
  if (byHeader !== undefined && byHeader.toLowerCase() !== t.id) return { refused: `E2b-Sandbox-Id names ${byHeader}, the host ${t.id}` };
  const port = headerOf(req, 'e2b-sandbox-port');
  if (port !== undefined && port !== String(t.port)) return { refused: `E2b-Sandbox-Port says ${port}, the host ${t.port}` };
  return { kind: 'sandbox', ...t };
}

/**
 * 421 Misdirected Request (RFC 9110 §15.5.20: this connection cannot answer
 * for that name; a client retries on a connection of its own), with forkd's
 * error body. The connection is closed.
 */
function misdirected(why: string): { head: Record<string, string>; body: string } {
  const requestId = newRequestId();
  const body = JSON.stringify(errorBody(new ForkdError('INVALID_ARGUMENT', why), requestId, false));
  return { head: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), [REQUEST_ID_HEADER]: requestId, connection: 'close' }, body };
}

export function sandboxHostHandlers(d: SandboxHostsDeps): { listener: RequestListener; upgrade: UpgradeHandler } {
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    const r = routeSandboxHost(req, d);
    if ('refused' in r) {
      const m = misdirected(r.refused);
      return void res.writeHead(421, m.head).end(m.body);
    }
    if (r.kind === 'e2b-api') return d.e2b.api!(req, res);
    if (r.port === ENVD_PORT && d.e2b.envd) return d.e2b.envd(req, res, r.id);
    d.api.listener(req, res);
  };
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const r = routeSandboxHost(req, d);
    if ('refused' in r) {
      const m = misdirected(r.refused);
      socket.end(`HTTP/1.1 421 Misdirected Request\r\n${Object.entries(m.head).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${m.body}`);
      return true;
    }
    if (r.kind !== 'sandbox' || (r.port === ENVD_PORT && d.e2b.envd)) return false;
    return d.api.proxyUpgrade(req, socket, head);
  };
  return { listener, upgrade };
}

/**
 * `{port}-{id}.{domain}` over HTTPS with the operator's wildcard certificate
 * (re-read when renewed): servers in sandboxes through the port proxy, E2B's
 * envd at port 49983 and E2B's API at `api.{domain}`, so E2B's SDK needs
 * nothing but its domain. HTTP/1.1 with upgrades, as forkd's API.
 */
export function serveSandboxHosts(d: SandboxHostsDeps, host: string, port: number, tls: TlsFiles): Promise<RunningServer> {
  const h = sandboxHostHandlers(d);
  return serveHttp({ listener: h.listener, upgrade: h.upgrade, host, port, tls, logger: d.api.logger, message: 'sandbox hosts serving' });
}
