import { getRequestListener } from '@hono/node-server';
import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { ControlPlane } from '../control-plane.js';
import { AccessTokens } from './access-tokens.js';
import { createE2bApi } from './e2b-api.js';
import { e2bContext } from './e2b-context.js';
import { createEnvdHandler } from './envd-server.js';
import { serveHttp, type HttpServerOptions } from '../../shared/http-server.js';
import { e2bAttributes } from './sandbox-mapping.js';

export interface E2bServerOptions {
  svc: NodeService;
  control: ControlPlane;
  logger: Logger;
  stateDir: string;
  host: string;
  /** null: not served. */
  apiPort: number | null;
  envdPort: number | null;
}

export interface E2bServers {
  apiUrl: string | undefined;
  envdUrl: string | undefined;
  close(): Promise<void>;
}

/**
 * The E2B-compatible surface of `forkd serve`: the control-plane API and the
 * envd gateway, each on its own port (either may be off), over the same node
 * and control plane as forkd's own API.
 */
export async function startE2bServers(o: E2bServerOptions): Promise<E2bServers> {
  if (o.apiPort === null && o.envdPort === null) return { apiUrl: undefined, envdUrl: undefined, close: async () => {} };
  const ctx = e2bContext(o.svc, o.control, o.logger, await AccessTokens.open(o.stateDir));
  // Sandboxes made through E2B before a restart get their precise timers back.
  for (const s of await o.svc.list().catch(() => [])) if (e2bAttributes(s)) ctx.lifetimes.schedule(s);
  const closers: (() => Promise<void>)[] = [];
  const close = async () => {
    ctx.lifetimes.close();
    for (const c of closers.splice(0)) await c();
  };
  const serve = async (name: string, listener: NonNullable<HttpServerOptions['listener']>, port: number) => {
    const l = await serveHttp({ listener, host: o.host, port, logger: o.logger, message: `e2b ${name} serving` });
    closers.push(() => l.close());
    return l.url;
  };
  try {
    const apiUrl = o.apiPort !== null ? await serve('api', getRequestListener(createE2bApi(ctx).fetch), o.apiPort) : undefined;
    const envdUrl = o.envdPort !== null ? await serve('envd', createEnvdHandler(ctx), o.envdPort) : undefined;
    return { apiUrl, envdUrl, close };
  } catch (err) {
    await close();
    throw err;
  }
}
