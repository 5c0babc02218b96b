import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient } from './client.js';
import { sendJson, startFakeServer } from './fake-server.js';

test('tenants.network/setNetwork and templates.network/setNetwork: the routes, bodies and answers', async () => {
  const seen: string[] = [];
  const srv = await startFakeServer(async (req, res) => {
    seen.push(`${req.method} ${req.url.pathname} ${req.body.length ? req.body.toString() : ''}`.trim());
    if (req.url.pathname.startsWith('/v1/tenants/')) return sendJson(res, 200, { tenant: 'acme', policy: { egress: false } });
    return sendJson(res, 200, { template: 'py', network: null });
  });
  try {
    const c = new ForkdClient({ url: srv.url });
    assert.deepEqual(await c.tenants.network('acme'), { tenant: 'acme', policy: { egress: false } });
    await c.tenants.setNetwork('acme', { egress: false, maxConnections: 5 });
    assert.deepEqual(await c.templates.network('py'), { template: 'py', network: null });
    await c.templates.setNetwork('py', { mode: 'egress', bandwidthMbps: 8 });
    await c.templates.setNetwork('py', null);
    assert.deepEqual(seen, [
      'GET /v1/tenants/acme/network',
      'PUT /v1/tenants/acme/network {"egress":false,"maxConnections":5}',
      'GET /v1/templates/py/network',
      'PUT /v1/templates/py/network {"network":{"mode":"egress","bandwidthMbps":8}}',
      'PUT /v1/templates/py/network {"network":null}',
    ]);
  } finally {
    await srv.close();
  }
});
