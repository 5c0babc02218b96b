import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { serveHttp, type RunningServer, type TlsFiles } from '../../shared/http-server.js';
import { createApp, type AppDeps } from './app.js';
import { attachStreamSocket } from './stream-socket.js';
import { proxyTarget, proxyUpgrade } from './port-proxy.js';
import { destroyQuietly, guardListener, recordFault } from '../../shared/connection-guard.js';

export type { RunningServer } from '../../shared/http-server.js';

/** Serves the API over HTTP/1.1 (HTTPS with `tls`) with WebSocket upgrades for interactive streams (and the port proxy's). */
export async function listen(deps: AppDeps, host: string, port: number, tls?: TlsFiles): Promise<RunningServer> {
  const { logger } = deps;
  const app = createApp(deps);
  const streams = attachStreamSocket(deps);
  const route = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    let t;
    try {
      t = proxyTarget(req.headers.host, req.url ?? '/', deps.proxyDomain);
    } catch {
      return false;
    }
    if (!t) return streams(req, socket, head);
    guardListener('port-proxy', () => destroyQuietly(socket), () => proxyUpgrade(deps.svc, deps.control, t, req, socket, head, logger))();
    return true;
  };
  // A throw here would leave the server's 'upgrade' listener: it ends this socket, never the process.
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): boolean => {
    try {
      return route(req, socket, head);
    } catch (err) {
      recordFault('websocket', err, { path: req.url?.slice(0, 200) });
      return false;
    }
  };
  return serveHttp({ fetch: app.fetch, host, port, upgrade, logger, tls });
}
