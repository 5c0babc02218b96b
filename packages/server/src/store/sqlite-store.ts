import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite-open.js';
import type { SandboxRecovery } from '@forkd/protocol';
import type { SandboxLoss, SandboxOrigin, SandboxPolicy, SandboxRecord, SnapshotRecord, Store, TemplateRecord } from './store.js';

const MIGRATIONS = [
  `CREATE TABLE sandboxes (
     id TEXT PRIMARY KEY,
     template TEXT NOT NULL,
     state TEXT NOT NULL,
     limits TEXT NOT NULL,
     env TEXT NOT NULL,
     metadata TEXT NOT NULL,
     created_at TEXT NOT NULL,
     error TEXT
   );
   CREATE TABLE templates (
     name TEXT PRIMARY KEY,
     created_at TEXT NOT NULL,
     volume TEXT NOT NULL
   );`,
  `ALTER TABLE sandboxes ADD COLUMN forked_from TEXT;
   ALTER TABLE sandboxes ADD COLUMN resume_from TEXT;
   CREATE TABLE snapshots (
     id TEXT PRIMARY KEY,
     sandbox_id TEXT NOT NULL,
     name TEXT,
     created_at TEXT NOT NULL,
     frozen_ms REAL NOT NULL,
     size_bytes INTEGER NOT NULL,
     parent_id TEXT,
     pinned INTEGER NOT NULL DEFAULT 0,
     reason TEXT NOT NULL
   );
   CREATE INDEX snapshots_by_sandbox ON snapshots (sandbox_id, created_at);`,
  `ALTER TABLE sandboxes ADD COLUMN policy TEXT;`,
  `ALTER TABLE templates ADD COLUMN images TEXT;
   ALTER TABLE templates ADD COLUMN from_template TEXT;`,
  `ALTER TABLE sandboxes ADD COLUMN instance TEXT;`,
  `ALTER TABLE sandboxes ADD COLUMN lost TEXT;
   ALTER TABLE sandboxes ADD COLUMN recovered TEXT;
   ALTER TABLE sandboxes ADD COLUMN origin TEXT;`,
  `ALTER TABLE sandboxes ADD COLUMN idmap INTEGER;
   ALTER TABLE templates ADD COLUMN idmap INTEGER;`,
];

interface TemplateRow {
  name: string;
  created_at: string;
  volume: string;
  images: string | null;
  from_template: string | null;
  idmap: number | null;
}

function toTemplate(r: TemplateRow): TemplateRecord {
  return { name: r.name, createdAt: r.created_at, volume: r.volume, ...(r.images ? { images: r.images } : {}), ...(r.from_template ? { from: r.from_template } : {}), ...(r.idmap !== null ? { idmap: r.idmap } : {}) };
}

interface SnapshotRow {
  id: string;
  sandbox_id: string;
  name: string | null;
  created_at: string;
  frozen_ms: number;
  size_bytes: number;
  parent_id: string | null;
  pinned: number;
  reason: SnapshotRecord['reason'];
}

function toSnapshot(r: SnapshotRow): SnapshotRecord {
  return {
    id: r.id,
    sandboxId: r.sandbox_id,
    ...(r.name ? { name: r.name } : {}),
    createdAt: r.created_at,
    frozenMs: r.frozen_ms,
    sizeBytes: r.size_bytes,
    ...(r.parent_id ? { parentId: r.parent_id } : {}),
    pinned: r.pinned === 1,
    reason: r.reason,
  };
}

interface SandboxRow {
  id: string;
  template: string;
  state: SandboxRecord['state'];
  limits: string;
  env: string;
  metadata: string;
  created_at: string;
  error: string | null;
  forked_from: string | null;
  resume_from: string | null;
  policy: string | null;
  instance: string | null;
  lost: string | null;
  recovered: string | null;
  origin: string | null;
  idmap: number | null;
}

function toRecord(r: SandboxRow): SandboxRecord {
  return {
    id: r.id,
    template: r.template,
    state: r.state,
    limits: JSON.parse(r.limits),
    env: JSON.parse(r.env),
    metadata: JSON.parse(r.metadata),
    createdAt: r.created_at,
    ...(r.error ? { error: r.error } : {}),
    ...(r.forked_from ? { forkedFrom: r.forked_from } : {}),
    ...(r.resume_from ? { resumeFrom: r.resume_from } : {}),
    ...(r.policy ? { policy: JSON.parse(r.policy) } : {}),
    ...(r.instance ? { instance: r.instance } : {}),
    ...(r.lost ? { lost: JSON.parse(r.lost) } : {}),
    ...(r.recovered ? { recovered: JSON.parse(r.recovered) } : {}),
    ...(r.origin ? { origin: JSON.parse(r.origin) } : {}),
    ...(r.idmap !== null ? { idmap: r.idmap } : {}),
  };
}

/** The default Store: one SQLite file in WAL mode, migrated on open. */
export class SqliteStore implements Store {
  readonly #db: Database.Database;

  constructor(file: string) {
    this.#db = openSqlite(file, MIGRATIONS);
  }

  insertSandbox(rec: SandboxRecord): void {
    this.#db
      .prepare('INSERT INTO sandboxes (id, template, state, limits, env, metadata, created_at, error, forked_from, resume_from, policy, instance, idmap) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(rec.id, rec.template, rec.state, JSON.stringify(rec.limits), JSON.stringify(rec.env), JSON.stringify(rec.metadata), rec.createdAt, rec.error ?? null, rec.forkedFrom ?? null, rec.resumeFrom ?? null, rec.policy ? JSON.stringify(rec.policy) : null, rec.instance ?? null, rec.idmap ?? null);
  }

  transition(id: string, from: SandboxRecord['state'], to: SandboxRecord['state'], error?: string): boolean {
    const r = this.#db.prepare('UPDATE sandboxes SET state = ?, error = ? WHERE id = ? AND state = ?').run(to, error ?? null, id, from);
    return r.changes === 1;
  }

  getSandbox(id: string): SandboxRecord | undefined {
    const r = this.#db.prepare('SELECT * FROM sandboxes WHERE id = ?').get(id) as SandboxRow | undefined;
    return r ? toRecord(r) : undefined;
  }

  listSandboxes(): SandboxRecord[] {
    return (this.#db.prepare('SELECT * FROM sandboxes ORDER BY created_at, id').all() as SandboxRow[]).map(toRecord);
  }

  deleteSandbox(id: string): void {
    this.#db.prepare('DELETE FROM sandboxes WHERE id = ?').run(id);
  }

  setPolicy(id: string, policy: SandboxPolicy | undefined): void {
    this.#db.prepare('UPDATE sandboxes SET policy = ? WHERE id = ?').run(policy ? JSON.stringify(policy) : null, id);
  }

  setResumeFrom(id: string, snapshotId: string | undefined): void {
    this.#db.prepare('UPDATE sandboxes SET resume_from = ? WHERE id = ?').run(snapshotId ?? null, id);
  }

  setInstance(id: string, instance: string, origin?: SandboxOrigin): void {
    const key = instance === id ? null : instance;
    if (origin) this.#db.prepare('UPDATE sandboxes SET instance = ?, origin = ? WHERE id = ?').run(key, JSON.stringify(origin), id);
    else this.#db.prepare('UPDATE sandboxes SET instance = ? WHERE id = ?').run(key, id);
  }

  setIdmap(id: string, hostId: number | undefined): void {
    this.#db.prepare('UPDATE sandboxes SET idmap = ? WHERE id = ?').run(hostId ?? null, id);
  }

  setOrigin(id: string, origin: SandboxOrigin | undefined): void {
    this.#db.prepare('UPDATE sandboxes SET origin = ? WHERE id = ?').run(origin ? JSON.stringify(origin) : null, id);
  }

  setLost(id: string, lost: SandboxLoss | undefined): void {
    this.#db.prepare('UPDATE sandboxes SET lost = ? WHERE id = ?').run(lost ? JSON.stringify(lost) : null, id);
  }

  setRecovered(id: string, recovered: SandboxRecovery | undefined): void {
    this.#db.prepare('UPDATE sandboxes SET recovered = ? WHERE id = ?').run(recovered ? JSON.stringify(recovered) : null, id);
  }

  insertSnapshot(rec: SnapshotRecord): void {
    this.#db
      .prepare('INSERT INTO snapshots (id, sandbox_id, name, created_at, frozen_ms, size_bytes, parent_id, pinned, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(rec.id, rec.sandboxId, rec.name ?? null, rec.createdAt, rec.frozenMs, rec.sizeBytes, rec.parentId ?? null, rec.pinned ? 1 : 0, rec.reason);
  }

  getSnapshot(id: string): SnapshotRecord | undefined {
    const r = this.#db.prepare('SELECT * FROM snapshots WHERE id = ?').get(id) as SnapshotRow | undefined;
    return r ? toSnapshot(r) : undefined;
  }

  setSnapshotSize(id: string, bytes: number): void {
    this.#db.prepare('UPDATE snapshots SET size_bytes = ? WHERE id = ?').run(bytes, id);
  }

  setPinned(id: string, pinned: boolean): void {
    this.#db.prepare('UPDATE snapshots SET pinned = ? WHERE id = ?').run(pinned ? 1 : 0, id);
  }

  snapshotTotals(): { count: number; bytes: number } {
    const r = this.#db.prepare('SELECT COUNT(*) AS count, COALESCE(SUM(size_bytes), 0) AS bytes FROM snapshots').get() as { count: number; bytes: number };
    return { count: r.count, bytes: r.bytes };
  }

  listSnapshots(sandboxId: string): SnapshotRecord[] {
    return (this.#db.prepare('SELECT * FROM snapshots WHERE sandbox_id = ? ORDER BY created_at, rowid').all(sandboxId) as SnapshotRow[]).map(toSnapshot);
  }

  deleteSnapshot(id: string): void {
    this.#db.prepare('DELETE FROM snapshots WHERE id = ?').run(id);
  }

  listForks(snapshotId: string): SandboxRecord[] {
    return (this.#db.prepare('SELECT * FROM sandboxes WHERE forked_from = ? ORDER BY created_at, id').all(snapshotId) as SandboxRow[]).map(toRecord);
  }

  upsertTemplate(rec: TemplateRecord): void {
    this.#db
      .prepare(
        'INSERT INTO templates (name, created_at, volume, images, from_template, idmap) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET created_at = excluded.created_at, volume = excluded.volume, images = excluded.images, from_template = excluded.from_template, idmap = excluded.idmap',
      )
      .run(rec.name, rec.createdAt, rec.volume, rec.images ?? null, rec.from ?? null, rec.idmap ?? null);
  }

  getTemplate(name: string): TemplateRecord | undefined {
    const r = this.#db.prepare('SELECT * FROM templates WHERE name = ?').get(name) as TemplateRow | undefined;
    return r ? toTemplate(r) : undefined;
  }

  listTemplates(): TemplateRecord[] {
    return (this.#db.prepare('SELECT * FROM templates ORDER BY name').all() as TemplateRow[]).map(toTemplate);
  }

  deleteTemplate(name: string): void {
    this.#db.prepare('DELETE FROM templates WHERE name = ?').run(name);
  }

  close(): void {
    this.#db.close();
  }
}
