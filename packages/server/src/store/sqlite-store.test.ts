import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { SqliteStore } from './sqlite-store.js';
import { storeConformance } from './store-conformance.js';

let dir: string;
let files = 0;
let last = '';

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forkd-sqlite-store-'));
});

after(async () => {
  await rm(dir, { recursive: true, force: true });
});

storeConformance('SqliteStore', async (opts) => {
  if (!opts?.reopen) last = join(dir, `store-${files++}.db`);
  return new SqliteStore(last);
});

test('SqliteStore: the database and its WAL files are owner-only', async () => {
  const file = join(dir, 'private.db');
  const store = new SqliteStore(file);
  try {
    await store.insertSandbox({ id: 'sbx-a', template: 'base', templateId: 'base', state: 'creating', limits: { memoryMb: 512, cpus: 1, pids: 1024 }, env: {}, metadata: {}, createdAt: '2026-01-01T00:00:00.000Z' });
    for (const f of [file, `${file}-wal`, `${file}-shm`]) assert.equal((await stat(f)).mode & 0o777, 0o600, f);
  } finally {
    await store.close();
  }
});

test('SqliteStore: a database of the first schema is migrated on open and keeps its rows', async () => {
  const file = join(dir, 'old.db');
  const old = new Database(file);
  old.exec(`CREATE TABLE sandboxes (id TEXT PRIMARY KEY, template TEXT NOT NULL, state TEXT NOT NULL, limits TEXT NOT NULL, env TEXT NOT NULL, metadata TEXT NOT NULL, created_at TEXT NOT NULL, error TEXT);
            CREATE TABLE templates (name TEXT PRIMARY KEY, created_at TEXT NOT NULL, volume TEXT NOT NULL);
            INSERT INTO sandboxes VALUES ('sbx-old', 'base', 'paused', '{"memoryMb":256,"cpus":1,"pids":100}', '{"A":"1"}', '{}', '2025-01-01T00:00:00.000Z', NULL);
            INSERT INTO templates VALUES ('base', '2025-01-01T00:00:00.000Z', 'templates/base');`);
  old.pragma('user_version = 1');
  old.close();
  const store = new SqliteStore(file);
  try {
    assert.deepEqual(await store.getSandbox('sbx-old'), { id: 'sbx-old', template: 'base', templateId: 'base', state: 'paused', limits: { memoryMb: 256, cpus: 1, pids: 100 }, env: { A: '1' }, metadata: {}, createdAt: '2025-01-01T00:00:00.000Z' });
    assert.deepEqual(await store.listTemplates(), [{ id: 'base', name: 'base', createdAt: '2025-01-01T00:00:00.000Z', volume: 'templates/base' }]);
    await store.setIdmap('sbx-old', 100000);
    assert.equal((await store.getSandbox('sbx-old'))?.idmap, 100000);
  } finally {
    await store.close();
  }
});

/** The schema before template ids (user_version 8), as that version's migrations left it. */
const SCHEMA_V8 = `
  CREATE TABLE sandboxes (id TEXT PRIMARY KEY, template TEXT NOT NULL, state TEXT NOT NULL, limits TEXT NOT NULL, env TEXT NOT NULL, metadata TEXT NOT NULL, created_at TEXT NOT NULL, error TEXT,
    forked_from TEXT, resume_from TEXT, policy TEXT, instance TEXT, lost TEXT, recovered TEXT, origin TEXT, idmap INTEGER, network TEXT);
  CREATE TABLE templates (name TEXT PRIMARY KEY, created_at TEXT NOT NULL, volume TEXT NOT NULL, images TEXT, from_template TEXT, idmap INTEGER);
  CREATE TABLE snapshots (id TEXT PRIMARY KEY, sandbox_id TEXT NOT NULL, name TEXT, created_at TEXT NOT NULL, frozen_ms REAL NOT NULL, size_bytes INTEGER NOT NULL, parent_id TEXT, pinned INTEGER NOT NULL DEFAULT 0, reason TEXT NOT NULL);
  CREATE INDEX snapshots_by_sandbox ON snapshots (sandbox_id, created_at);`;

test('SqliteStore: a database from before template ids keeps its templates, their sandboxes point at them, a new template of a deleted name is another', async () => {
  const file = join(dir, 'v8.db');
  const old = new Database(file);
  old.exec(`${SCHEMA_V8}
    INSERT INTO templates VALUES ('base', '2025-01-01T00:00:00.000Z', 'templates/base', NULL, NULL, NULL);
    INSERT INTO templates VALUES ('py', '2025-01-02T00:00:00.000Z', 'templates/py', 'template-images/py', 'base', 65536);
    INSERT INTO sandboxes (id, template, state, limits, env, metadata, created_at) VALUES ('sbx-py', 'py', 'running', '{"memoryMb":256,"cpus":1,"pids":100}', '{}', '{}', '2025-01-03T00:00:00.000Z');`);
  old.pragma('user_version = 8');
  old.close();
  const store = new SqliteStore(file);
  try {
    assert.deepEqual(await store.listTemplates(), [
      { id: 'base', name: 'base', createdAt: '2025-01-01T00:00:00.000Z', volume: 'templates/base' },
      { id: 'py', name: 'py', createdAt: '2025-01-02T00:00:00.000Z', volume: 'templates/py', images: 'template-images/py', from: 'base', idmap: 65536 },
    ]);
    assert.equal((await store.getSandbox('sbx-py'))?.templateId, 'py', 'the key it had: its template name');
    await store.deleteTemplate('py');
    await store.upsertTemplate({ id: 'tpl_new', name: 'py', createdAt: '2026-01-01T00:00:00.000Z', volume: 'templates/py' });
    assert.equal((await store.getSandbox('sbx-py'))?.templateId, 'py', 'not the new template');
  } finally {
    await store.close();
  }
});
