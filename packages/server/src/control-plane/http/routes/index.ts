import type { Hono } from 'hono';
import { ForkdError } from '@forkd/protocol';
import type { AppEnv } from '../app-env.js';
import { jsonBody } from '../json-body.js';
import { validate } from '../validate.js';
import { ADMIN_ROUTES } from './admin.js';
import { FILE_ROUTES } from './files.js';
import { KEY_AND_AUDIT_ROUTES } from './keys-and-audit.js';
import { POLICY_ROUTES } from './policies.js';
import { NETWORK_POLICY_ROUTES } from './network-policy.js';
import { NODE_ROUTES } from './nodes.js';
import { PROCESS_ROUTES } from './processes.js';
import type { Route, RouteDeps } from './route.js';
import { SANDBOX_ROUTES } from './sandboxes.js';
import { SECRET_ROUTES } from './secrets.js';
import { SNAPSHOT_ROUTES } from './snapshots.js';
import { TEMPLATE_ROUTES } from './templates.js';

export type { Route, RouteDeps } from './route.js';

/** The API, one table: the router (mountRoutes) and openapi.json (openapi.ts) both come from it. */
export const ROUTES: readonly Route[] = [...ADMIN_ROUTES, ...TEMPLATE_ROUTES, ...SANDBOX_ROUTES, ...SNAPSHOT_ROUTES, ...PROCESS_ROUTES, ...FILE_ROUTES, ...POLICY_ROUTES, ...SECRET_ROUTES, ...KEY_AND_AUDIT_ROUTES, ...NETWORK_POLICY_ROUTES, ...NODE_ROUTES];

/**
 * Mounts the table's routes: `public` ones (no key) or the others. Public
 * ones go in before the auth middleware, the rest after it.
 */
export function mountRoutes(app: Hono<AppEnv>, deps: RouteDeps, which: 'public' | 'authenticated'): void {
  for (const r of ROUTES) {
    if (!!r.public !== (which === 'public')) continue;
    app.on(r.method.toUpperCase(), r.path, async (c) => {
      const res = await r.handler(c, deps, {
        body: async () => (r.body ? validate(r.body, await jsonBody(c, r.maxBodyBytes)) : undefined) as never,
        query: () => (r.query ? validate(r.query, c.req.query()) : undefined) as never,
      });
      if (res) return res;
      if (r.response?.status !== 204) throw new ForkdError('INTERNAL', `route ${r.method.toUpperCase()} ${r.path} answered nothing`);
      return c.body(null, 204);
    });
  }
}
