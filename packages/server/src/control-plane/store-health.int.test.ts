import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { PgControlStore } from '../store/pg-control-store.js';
import { startPostgres, type PostgresServer } from '../testing/postgres-server.js';
import { testApp } from './http/app-test-kit.js';
import { STORE_HEALTH_DEADLINE_MS } from './store-health.js';

let server: PostgresServer;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

test('GET /v1/health on PostgreSQL: 503 within the deadline while the server is stopped, 200 again once it is back', async () => {
  const store = await PgControlStore.open(await server.createDatabase());
  const { app } = await testApp(undefined, undefined, { store });
  try {
    assert.equal((await app.request('/v1/health')).status, 200);
    await server.halt();
    const t0 = performance.now();
    const down = await app.request('/v1/health');
    const ms = performance.now() - t0;
    assert.equal(down.status, 503);
    assert.equal(((await down.json()) as { error: { code: string } }).error.code, 'UNAVAILABLE');
    assert.ok(ms <= STORE_HEALTH_DEADLINE_MS + 500, `answered in ${Math.round(ms)} ms`);
    // What needs no database still answers meanwhile.
    assert.equal((await app.request('/openapi.json')).status, 200);
    await server.start();
    const t1 = Date.now();
    while ((await app.request('/v1/health')).status !== 200) {
      assert.ok(Date.now() - t1 < 30_000, 'healthy again within 30 s of the restart');
      await new Promise((r) => setTimeout(r, 200));
    }
  } finally {
    await store.close();
  }
});
