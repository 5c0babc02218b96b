import { getRequestListener } from '@hono/node-server';
import type { NodeService } from '../../node-contract/index.js';
import type { Logger } from '../../shared/logger.js';
import type { ControlPlane } from '../control-plane.js';
import { AccessTokens } from './access-tokens.js';
import { createE2bApi } from './e2b-api.js';
import { e2bContext } from './e2b-context.js';
import { createEnvdHandler, type EnvdListener } from './envd-server.js';
import type { RequestListener } from 'node:http';
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
  /** Where sandbox host names are served over HTTPS (told to the SDK as each sandbox's domain); absent: not served. */
  sandboxDomain?: string | undefined;
}

/** The two surfaces as request listeners, for the sandbox hosts' HTTPS listener too (`api.{domain}`, `49983-{id}.{domain}`). */
export interface E2bListeners {
  api?: RequestListener | undefined;
  envd?: EnvdListener | undefined;
}

export interface E2bServers {
  apiUrl: string | undefined;
  envdUrl: string | undefined;
  /** Each present when its port is on. */
  listeners: E2bListeners;
  close(): Promise<void>;
}

/**
 * The E2B-compatible surface of `forkd serve`: the control-plane API and the
 * envd gateway, each on its own port (either may be off), over the same node
 * and control plane as forkd's own API.
 */
export async function startE2bServers(o: E2bServerOptions): Promise<E2bServers> {
  if (o.apiPort === null && o.envdPort === null) return { apiUrl: undefined, envdUrl: undefined, listeners: {}, close: async () => {} };
  const ctx = e2bContext(o.svc, o.control, o.logger, o.control.e2bTokens ?? (await AccessTokens.open(o.stateDir)), o.sandboxDomain);
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
    const listeners: E2bListeners = {
      api: o.apiPort !== null ? getRequestListener(createE2bApi(ctx).fetch) : undefined,
      envd: o.envdPort !== null ? createEnvdHandler(ctx) : undefined,
    };
    const apiUrl = listeners.api && o.apiPort !== null ? await serve('api', listeners.api, o.apiPort) : undefined;
    const envdUrl = listeners.envd && o.envdPort !== null ? await serve('envd', listeners.envd, o.envdPort) : undefined;
    return { apiUrl, envdUrl, listeners, close };
  } catch (err) {
    await close();
    throw err;
  }
}
