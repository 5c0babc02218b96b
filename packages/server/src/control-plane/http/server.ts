import { createAdaptorServer } from '@hono/node-server';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../shared/logger.js';
import { createApp, type AppDeps } from './app.js';
import { attachStreamSocket } from './stream-socket.js';
import { proxyTarget, proxyUpgrade } from './port-proxy.js';

export interface RunningServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** Serves the API over HTTP/1.1 with WebSocket upgrades for interactive streams. */
export async function listen(deps: AppDeps, host: string, port: number): Promise<RunningServer> {
  const { logger } = deps;
  const app = createApp(deps);
  const server = createAdaptorServer({ fetch: app.fetch }) as Server;
  const upgrade = attachStreamSocket(deps);
  server.on('upgrade', (req, socket, head) => {
    let t;
    try {
      t = proxyTarget(req.headers.host, req.url ?? '/', deps.proxyDomain);
    } catch {
      socket.destroy();
      return;
    }
    if (t) void proxyUpgrade(deps.svc, deps.control, t, req, socket, head, logger);
    else if (!upgrade(req, socket, head)) socket.destroy();
  });
  // Uploads of large files stream for minutes; the defaults would cut them.
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${addr.port}`;
  logger.info('listening', { url });
  return {
    url,
    port: addr.port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
