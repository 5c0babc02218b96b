import { AuditQuery, AuditRecord, CreatedKey, CreateKeyRequest, ForkdError, KeyInfo } from '@forkd/protocol';
import { list, none, ok, param, route } from './route.js';

/** API keys and the audit log: who may call, and what was done. */
export const KEY_AND_AUDIT_ROUTES = [
  route({
    method: 'post',
    path: '/v1/keys',
    summary: 'Create an API key (admin keys only); the key is shown once',
    body: CreateKeyRequest,
    response: ok(CreatedKey, 201),
    handler: async (c, { control }, input) => {
      const req = await input.body();
      return c.json(await control.keys.create(req, c.get('who')), 201);
    },
  }),
  route({
    method: 'get',
    path: '/v1/keys',
    summary: 'List API keys',
    response: ok(list('keys', KeyInfo)),
    handler: async (c, { control }) => c.json({ keys: await control.keys.list(c.get('who')) }),
  }),
  route({
    method: 'delete',
    path: '/v1/keys/:id',
    summary: 'Revoke an API key',
    response: none,
    handler: async (c, { control }) => {
      await control.keys.revoke(param(c, 'id'), c.get('who'));
    },
  }),
  route({
    method: 'get',
    path: '/v1/audit',
    summary: 'The audit log, newest first',
    query: AuditQuery,
    response: ok(list('records', AuditRecord)),
    handler: async (c, { control }, input) => {
      const q = input.query();
      const who = c.get('who');
      if (q.tenant && q.tenant !== who.tenant && !who.admin) throw new ForkdError('PERMISSION_DENIED', 'only an admin key reads other tenants\' audit records');
      return c.json({ records: await control.store.queryAudit({ ...q, tenant: who.admin ? q.tenant : who.tenant }) });
    },
  }),
];
