import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import postgres from 'postgres';
import { ForkdError } from '@forkd/protocol';
import { controlStoreConformance } from './control-store-conformance.js';
import { fleetStoreConformance } from '../fleet/fleet-store-conformance.js';
import { PgControlStore } from './pg-control-store.js';
import { PG_MIGRATIONS } from './pg-migrations.js';
import { startPostgres, type PostgresServer } from '../testing/postgres-server.js';
import { openControlPlane } from '../control-plane/control-plane.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { hashKey } from '../control-plane/auth/api-keys.js';

let server: PostgresServer;
before(async () => {
  server = await startPostgres();
});
after(() => server?.stop());

controlStoreConformance('PostgreSQL', async () => PgControlStore.open(await server.createDatabase()));
fleetStoreConformance('PostgreSQL', async () => PgControlStore.open(await server.createDatabase()));

/** The URL with a password in it (trust auth ignores it), to check no message or log repeats it. */
const withPassword = (url: string) => url.replace('postgres@', 'postgres:s3cret-pw@');

test('PgControlStore: replicas starting at once migrate once (advisory lock), and a restart migrates nothing', async () => {
  const url = await server.createDatabase();
  const stores = await Promise.all([1, 2, 3, 4].map(() => PgControlStore.open(url)));
  await stores[0]!.insertKey({ id: 'key-1', tenant: 'acme', hash: 'h1', prefix: 'forkd_', admin: false, createdAt: '2026-01-01T00:00:00.000Z' });
  for (const s of stores) assert.equal((await s.keyByHash('h1'))?.tenant, 'acme', 'one database, seen by every replica');
  await Promise.all(stores.map((s) => s.close()));
  const again = await PgControlStore.open(url);
  await again.close();
  const sql = postgres(url, { max: 1, onnotice: () => {} });
  try {
    assert.deepEqual((await sql<{ version: number }[]>`SELECT version FROM forkd_schema ORDER BY version`).map((r) => r.version), PG_MIGRATIONS.map((_, i) => i + 1));
  } finally {
    await sql.end();
  }
});

test('PgControlStore: an unreachable server, a wrong database or a non-PostgreSQL URL is a clear ForkdError without the password', async () => {
  const cases: [string, RegExp][] = [
    ['postgres://forkd:s3cret-pw@127.0.0.1:1/forkd', /ECONNREFUSED|connect/],
    [withPassword(server.url('no_such_db')), /no_such_db.*does not exist|does not exist/],
    ['mysql://forkd:s3cret-pw@127.0.0.1/forkd', /postgres:\/\//],
    ['postgres://forkd:s3cret-pw@[::1/forkd', /./],
  ];
  for (const [url, reason] of cases) {
    await assert.rejects(PgControlStore.open(url), (err: unknown) => {
      assert.ok(err instanceof ForkdError, String(err));
      assert.match(err.message, reason);
      assert.ok(!err.message.includes('s3cret-pw'), err.message);
      assert.ok(!JSON.stringify(err).includes('s3cret-pw'));
      return true;
    }, url.replace('s3cret-pw', '***'));
  }
});

test('openControlPlane: FORKD_DATABASE_URL selects PostgreSQL (two control planes share keys); the logs never hold the password', async () => {
  const url = withPassword(await server.createDatabase());
  const dirs = [await mkdtemp(join(tmpdir(), 'forkd-cp-a-')), await mkdtemp(join(tmpdir(), 'forkd-cp-b-'))];
  let log = '';
  const logger = createLogger('debug', (l) => void (log += `${l}\n`));
  try {
    const [a, b] = await Promise.all(dirs.map((d) => openControlPlane(loadConfig({ FORKD_STATE_DIR: d, FORKD_DATABASE_URL: url }), logger)));
    assert.ok(a!.store instanceof PgControlStore);
    assert.notEqual(a!.replicaId, b!.replicaId);
    const keyA = (await readFile(join(dirs[0]!, 'admin.key'), 'utf8')).trim();
    assert.equal((await b!.store.keyByHash(hashKey(keyA)))?.admin, true, "one replica's admin key is known to the other");
    await Promise.all([a!.close(), b!.close()]);
    await assert.rejects(openControlPlane(loadConfig({ FORKD_STATE_DIR: dirs[0], FORKD_DATABASE_URL: 'postgres://forkd:s3cret-pw@127.0.0.1:1/x' }), logger), (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE');
    assert.match(log, /control store: PostgreSQL/);
    assert.ok(!log.includes('s3cret-pw'), log);
  } finally {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
});
