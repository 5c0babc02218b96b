import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { controlStoreConformance } from './control-store-conformance.js';
import { fleetStoreConformance } from '../fleet/fleet-store-conformance.js';
import { SqliteControlStore } from './sqlite-control-store.js';

const dir = await mkdtemp(join(tmpdir(), 'forkd-control-store-'));
let n = 0;
after(() => rm(dir, { recursive: true, force: true }));

controlStoreConformance('SQLite', async () => new SqliteControlStore(join(dir, `control-${++n}.db`)));
fleetStoreConformance('SQLite', async () => new SqliteControlStore(join(dir, `control-${++n}.db`)));

/** control.db as the version before template keys left it (user_version 8): its schema, from that version's migrations. */
const SCHEMA_V8 = `
  CREATE TABLE api_keys (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, hash TEXT NOT NULL UNIQUE, prefix TEXT NOT NULL, name TEXT, admin INTEGER NOT NULL, created_at TEXT NOT NULL, revoked_at TEXT);
  CREATE TABLE owners (kind TEXT NOT NULL, id TEXT NOT NULL, tenant TEXT NOT NULL, PRIMARY KEY (kind, id));
  CREATE INDEX owners_by_tenant ON owners (tenant, kind);
  CREATE TABLE audit (id INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, key_id TEXT, tenant TEXT, sandbox_id TEXT, operation TEXT NOT NULL, target TEXT, code TEXT NOT NULL, status INTEGER NOT NULL, duration_ms REAL NOT NULL, request_id TEXT);
  CREATE INDEX audit_by_tenant ON audit (tenant, id);
  CREATE TABLE sandbox_tokens (id TEXT PRIMARY KEY, token TEXT NOT NULL);
  CREATE TABLE sandbox_token_hashes (id TEXT PRIMARY KEY, hash TEXT NOT NULL);
  CREATE INDEX audit_by_at ON audit (at);
  CREATE TABLE tenant_limits (tenant TEXT PRIMARY KEY, limits TEXT NOT NULL, updated_at TEXT NOT NULL);
  CREATE TABLE policies (scope TEXT NOT NULL, id TEXT NOT NULL, policy TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (scope, id));
  CREATE TABLE secrets (tenant TEXT NOT NULL, name TEXT NOT NULL, sealed BLOB NOT NULL, created_at TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (tenant, name));
  CREATE TABLE grants (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, sandbox_id TEXT NOT NULL, secret TEXT NOT NULL, spec TEXT NOT NULL, created_at TEXT NOT NULL, expires_at TEXT);
  CREATE INDEX grants_by_sandbox ON grants (sandbox_id);
  CREATE TABLE network_settings (scope TEXT NOT NULL, name TEXT NOT NULL, setting TEXT NOT NULL, updated_at TEXT NOT NULL, PRIMARY KEY (scope, name));`;

test('SqliteControlStore: a database from before template keys keeps every policy and default network, each under the tenant(s) it governed', async () => {
  const file = join(dir, 'v8.db');
  const old = new Database(file);
  const at = '2026-01-01T00:00:00.000Z';
  old.exec(SCHEMA_V8);
  const put = (sql: string, ...args: unknown[]) => old.prepare(sql).run(...args);
  for (const [id, tenant] of [['k1', 'acme'], ['k2', 'beta']]) put('INSERT INTO api_keys VALUES (?, ?, ?, ?, NULL, 0, ?, NULL)', id, tenant, `hash-${id}`, 'fk_', at);
  put("INSERT INTO owners VALUES ('template', 'py', 'acme')");
  put("INSERT INTO owners VALUES ('sandbox', 'sbx-a', 'acme')");
  put("INSERT INTO policies VALUES ('template', 'py', ?, ?)", '{"exec":{"deny":["^rm "]}}', at);
  put("INSERT INTO policies VALUES ('template', 'base', ?, ?)", '{"network":"off"}', at);
  put("INSERT INTO policies VALUES ('tenant', 'acme', ?, ?)", '{"maxDurationSeconds":60}', at);
  put("INSERT INTO policies VALUES ('sandbox', 'sbx-a', ?, ?)", '{"files":{"hidden":["/root"]}}', at);
  put("INSERT INTO network_settings VALUES ('template', 'py', ?, ?)", '{"mode":"egress","allowOut":[],"denyOut":[]}', at);
  put("INSERT INTO network_settings VALUES ('template', 'base', ?, ?)", '{"mode":"none","allowOut":[],"denyOut":[]}', at);
  put("INSERT INTO network_settings VALUES ('tenant', 'beta', ?, ?)", '{"egress":false}', at);
  old.pragma('user_version = 8');
  old.close();

  const store = new SqliteControlStore(file);
  try {
    // An owned template's: its owner's only; a legacy template's id is its name.
    assert.deepEqual(await store.policy('template', 'acme/py'), { exec: { deny: ['^rm '] } });
    assert.equal(await store.policy('template', 'beta/py'), undefined);
    assert.deepEqual(await store.networkSetting('template', 'acme/py'), { mode: 'egress', allowOut: [], denyOut: [] });
    // A shared template's governed every tenant: each keeps it (and sandboxes without an owner, '').
    for (const t of ['acme', 'beta', '']) {
      assert.deepEqual(await store.policy('template', `${t}/base`), { network: 'off' }, t);
      assert.deepEqual(await store.networkSetting('template', `${t}/base`), { mode: 'none', allowOut: [], denyOut: [] }, t);
    }
    // Nothing left under a bare name, the other scopes untouched.
    for (const name of ['py', 'base']) {
      assert.equal(await store.policy('template', name), undefined);
      assert.equal(await store.networkSetting('template', name), undefined);
    }
    assert.deepEqual(await store.policy('tenant', 'acme'), { maxDurationSeconds: 60 });
    assert.deepEqual(await store.policy('sandbox', 'sbx-a'), { files: { hidden: ['/root'] } });
    assert.deepEqual(await store.networkSetting('tenant', 'beta'), { egress: false });
    assert.equal(await store.owner('template', 'py'), 'acme', 'the name stays reserved for its tenant');
    assert.equal((await store.keyByHash('hash-k2'))?.tenant, 'beta');
  } finally {
    await store.close();
  }
});
