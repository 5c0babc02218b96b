import type { IncomingMessage, RequestListener } from 'node:http';
import type { Duplex } from 'node:stream';
import { getRequestListener } from '@hono/node-server';
import { serveHttp, type RunningServer, type TlsFiles } from '../../shared/http-server.js';
import { OpenStreams } from '../../shared/open-streams.js';
import type { Logger } from '../../shared/logger.js';
import { createApp, type AppDeps } from './app.js';
import { attachStreamSocket } from './stream-socket.js';
import { proxyTarget, proxyUpgrade } from './port-proxy.js';
import { destroyQuietly, guardListener, recordFault } from '../../shared/connection-guard.js';

export type { RunningServer } from '../../shared/http-server.js';

/** An upgrade request's handler; false: not this handler's (the socket is then destroyed). */
export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** The API once, for every listener that serves it (forkd's port, and the sandbox hosts' HTTPS one). */
export interface ApiHandlers {
  /** The REST API with the port proxy in front (by path, or every path of a `{port}-{id}.{domain}` host). */
  listener: RequestListener;
  /** Upgrades: the port proxy's, else the API's WebSocket streams. */
  upgrade: UpgradeHandler;
  /** Only the port proxy's upgrades. */
  proxyUpgrade: UpgradeHandler;
  logger: Logger;
  /** The process streams open to clients: a stopping server ends them cleanly first. */
  streams: OpenStreams;
}

/** A throw in an upgrade handler would leave the server's 'upgrade' listener: it ends this socket, never the process. */
function guarded(h: UpgradeHandler): UpgradeHandler {
  return (req, socket, head) => {
    try {
      return h(req, socket, head);
    } catch (err) {
      recordFault('websocket', err, { path: req.url?.slice(0, 200) });
      return false;
    }
  };
}

export function apiHandlers(given: AppDeps): ApiHandlers {
  const deps = { ...given, streams: given.streams ?? new OpenStreams() };
  const { logger } = deps;
  const app = createApp(deps);
  const streams = attachStreamSocket(deps);
  /** The port proxy's target, or undefined (null: a target that cannot be, such as port 0). */
  const target = (req: IncomingMessage) => {
    try {
      return proxyTarget(req.headers.host, req.url ?? '/', deps.proxyDomain);
    } catch {
      return null;
    }
  };
  const proxy = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    const t = target(req);
    if (!t) return false;
    guardListener('port-proxy', () => destroyQuietly(socket), () => proxyUpgrade(deps.svc, deps.control, t, req, socket, head, logger))();
    return true;
  };
  const any = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => (target(req) === undefined ? streams(req, socket, head) : proxy(req, socket, head));
  return { listener: getRequestListener(app.fetch), upgrade: guarded(any), proxyUpgrade: guarded(proxy), logger, streams: deps.streams };
}

/** Serves the API over HTTP/1.1 (HTTPS with `tls`) with WebSocket upgrades for interactive streams (and the port proxy's). */
export function serveApi(h: ApiHandlers, host: string, port: number, tls?: TlsFiles): Promise<RunningServer> {
  return serveHttp({ listener: h.listener, host, port, upgrade: h.upgrade, logger: h.logger, tls, endStreams: () => h.streams.endAll() });
}

export async function listen(deps: AppDeps, host: string, port: number, tls?: TlsFiles): Promise<RunningServer> {
  return serveApi(apiHandlers(deps), host, port, tls);
}
