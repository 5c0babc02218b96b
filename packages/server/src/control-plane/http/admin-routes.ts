import type { Hono } from 'hono';
import { AuditQuery, CreateKeyRequest, ForkdError } from '@forkd/protocol';
import type { ControlPlane } from '../control-plane.js';
import type { AppEnv } from './app.js';
import { jsonBody } from './json-body.js';
import { validate } from './validate.js';

/** API keys and the audit log: who may call, and what was done. */
export function mountAdminRoutes(app: Hono<AppEnv>, control: ControlPlane): void {
  app.post('/v1/keys', async (c) => {
    const req = validate(CreateKeyRequest, await jsonBody(c));
    return c.json(control.keys.create(req, c.get('who')), 201);
  });
  app.get('/v1/keys', (c) => c.json({ keys: control.keys.list(c.get('who')) }));
  app.delete('/v1/keys/:id', (c) => {
    control.keys.revoke(c.req.param('id'), c.get('who'));
    return c.body(null, 204);
  });

  app.get('/v1/audit', (c) => {
    const q = validate(AuditQuery, c.req.query());
    const who = c.get('who');
    if (q.tenant && q.tenant !== who.tenant && !who.admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key reads other tenants\' audit records');
    return c.json({ records: control.store.queryAudit({ ...q, tenant: who.admin ? q.tenant : who.tenant }) });
  });
}
