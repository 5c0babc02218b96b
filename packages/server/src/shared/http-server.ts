import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { Server as TlsServer } from 'node:tls';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createAdaptorServer } from '@hono/node-server';
import type { Logger } from './logger.js';
import { watchTlsPair, type TlsPair, type TlsSource } from './tls-files.js';

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface HttpServerOptions {
  /** The app's fetch handler (Hono's `app.fetch`), or a plain Node request listener (a surface that writes its own framing). */
  fetch?: (req: Request, env: { incoming: IncomingMessage }) => Response | Promise<Response>;
  listener?: (req: IncomingMessage, res: ServerResponse) => void;
  host: string;
  port: number;
  /** Upgrade requests (WebSockets, port connections); the socket is destroyed when this returns false. */
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;
  logger: Logger;
  /** Said in the `listening` log line. */
  role?: string;
  /** That line's message instead of `listening` (which test fixtures wait for from forkd's own API). */
  message?: string;
  /** Serve HTTPS with this certificate chain and key (PEM); absent: plain HTTP. */
  tls?: TlsFiles | undefined;
  /** Ends the process streams open to clients cleanly (see OpenStreams), returning how many; close() then waits for them (bounded). */
  endStreams?: () => number;
}

/** How long a stopping server waits for the streams it ended to reach their clients before it cuts every connection. */
const STREAM_END_GRACE_MS = 2000;

/** A server's certificate chain and private key, PEM, as read at start; with `source`, re-read when its files change. */
export interface TlsFiles extends TlsPair {
  source?: TlsSource | undefined;
  /** How often the files are looked at (default 30 s). */
  reloadEveryMs?: number | undefined;
}

function makeServer(o: HttpServerOptions): Server {
  if (o.tls) {
    // HTTP/1.1 only, said in ALPN: clients offering h2 (undici with allowH2) settle on it.
    const opts = { cert: o.tls.cert, key: o.tls.key, ALPNProtocols: ['http/1.1'] };
    if (o.listener) return createTlsServer(opts, o.listener) as unknown as Server;
    return createAdaptorServer({ fetch: o.fetch as never, createServer: createTlsServer, serverOptions: opts }) as unknown as Server;
  }
  return o.listener ? createServer(o.listener) : (createAdaptorServer({ fetch: o.fetch as never }) as Server);
}

/**
 * Serves a fetch handler (or a request listener) over HTTP/1.1, as forkd's
 * API, its node contract and its E2B surfaces all do. Streams and uploads last for minutes or
 * hours: the request timeout is off (headers must still come within 60 s).
 * Upgraded sockets are no longer the server's to close: close() destroys
 * them too, so nothing outlives it. Process streams are ended first and
 * given up to 2 s to reach their clients (their output up to the end, so
 * they resume on the next daemon with nothing lost).
 */
export async function serveHttp(o: HttpServerOptions): Promise<RunningServer> {
  const server = makeServer(o);
  const upgraded = new Set<Duplex>();
  const stopping = refuseWhenStopping(server);
  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    if (stopping.now) return socket.destroy();
    upgraded.add(socket);
    socket.once('close', () => upgraded.delete(socket));
    // The server's own listeners left the socket with the upgrade: a reset while the handler is still
    // deciding (authenticating) would be an 'error' nobody hears, a throw out of the process.
    socket.on('error', () => socket.destroy());
    if (!o.upgrade?.(req, socket, head)) socket.destroy();
  });
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  // Longer than the usual clients' idle keep-alive (undici: 4 s; proxies: 60 s), so they close first, never mid-request.
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const stopWatching = o.tls?.source ? watchTlsPair(server as unknown as TlsServer, o.tls.source, o.logger, o.tls.reloadEveryMs) : undefined;
  const addr = server.address() as AddressInfo;
  const url = `${o.tls ? 'https' : 'http'}://${o.host.includes(':') ? `[${o.host}]` : o.host}:${addr.port}`;
  o.logger.info(o.message ?? 'listening', { url, ...(o.role ? { role: o.role } : {}) });
  return {
    url,
    port: addr.port,
    close: async () => {
      stopWatching?.();
      stopping.now = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      if (o.endStreams?.()) await settle(server, upgraded, STREAM_END_GRACE_MS);
      server.closeAllConnections();
      for (const s of upgraded) s.destroy();
      await closed;
    },
  };
}

/**
 * Once the server stops, a request that still arrives on an open keep-alive
 * connection (server.close() only stops new connections) is answered 503
 * UNAVAILABLE and the connection closed: a client re-attaching a stream the
 * stop ended would otherwise start a new one that nothing ends, hold the stop
 * for its grace and be cut with output it was sent. Clients retry it on the
 * next daemon.
 */
function refuseWhenStopping(server: Server): { now: boolean } {
  const state = { now: false };
  const handlers = server.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  server.removeAllListeners('request');
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    if (!state.now) {
      for (const h of handlers) h.call(server, req, res);
      return;
    }
    res.writeHead(503, { 'content-type': 'application/json', connection: 'close', 'retry-after': '1' });
    res.end(JSON.stringify({ error: { code: 'UNAVAILABLE', message: 'forkd is stopping: retry on the next one' } }));
  });
  return state;
}

/** Waits until every connection has ended (idle keep-alive ones are closed), or `ms`. */
async function settle(server: Server, upgraded: Set<Duplex>, ms: number): Promise<void> {
  const until = Date.now() + ms;
  const open = () => new Promise<number>((r) => server.getConnections((err, n) => r(err ? 0 : n)));
  while (Date.now() < until) {
    server.closeIdleConnections();
    if ((await open()) === 0 && upgraded.size === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}
