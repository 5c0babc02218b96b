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
    await store.insertSandbox({ id: 'sbx-a', template: 'base', state: 'creating', limits: { memoryMb: 512, cpus: 1, pids: 1024 }, env: {}, metadata: {}, createdAt: '2026-01-01T00:00:00.000Z' });
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
    assert.deepEqual(await store.getSandbox('sbx-old'), { id: 'sbx-old', template: 'base', state: 'paused', limits: { memoryMb: 256, cpus: 1, pids: 100 }, env: { A: '1' }, metadata: {}, createdAt: '2025-01-01T00:00:00.000Z' });
    assert.deepEqual(await store.listTemplates(), [{ name: 'base', createdAt: '2025-01-01T00:00:00.000Z', volume: 'templates/base' }]);
    await store.setIdmap('sbx-old', 100000);
    assert.equal((await store.getSandbox('sbx-old'))?.idmap, 100000);
  } finally {
    await store.close();
  }
});
