import type Database from 'better-sqlite3';
import { openSqlite } from './sqlite-open.js';
import type { NetworkRules, SandboxRecovery } from '@forkd/protocol';
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
  `ALTER TABLE sandboxes ADD COLUMN network TEXT;`,
  // Template identity (newTemplateId): what existed keeps the key it had, its name.
  `ALTER TABLE templates ADD COLUMN id TEXT;
   UPDATE templates SET id = name;
   ALTER TABLE sandboxes ADD COLUMN template_id TEXT;
   UPDATE sandboxes SET template_id = template;`,
  `ALTER TABLE sandboxes ADD COLUMN base TEXT;`,
  `ALTER TABLE sandboxes ADD COLUMN defaults TEXT;
   ALTER TABLE templates ADD COLUMN image TEXT;`,
];

interface TemplateRow {
  id: string | null;
  name: string;
  created_at: string;
  volume: string;
  images: string | null;
  from_template: string | null;
  image: string | null;
  idmap: number | null;
}

function toTemplate(r: TemplateRow): TemplateRecord {
  return { id: r.id ?? r.name, name: r.name, createdAt: r.created_at, volume: r.volume, ...(r.images ? { images: r.images } : {}), ...(r.from_template ? { from: r.from_template } : {}), ...(r.idmap !== null ? { idmap: r.idmap } : {}), ...(r.image ? { image: JSON.parse(r.image) } : {}) };
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
  template_id: string | null;
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
  network: string | null;
  base: string | null;
  defaults: string | null;
}

function toRecord(r: SandboxRow): SandboxRecord {
  return {
    id: r.id,
    template: r.template,
    templateId: r.template_id ?? r.template,
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
    ...(r.network ? { network: JSON.parse(r.network) } : {}),
    ...(r.base ? { base: r.base } : {}),
    ...(r.defaults ? { defaults: JSON.parse(r.defaults) } : {}),
  };
}

/** A JSON column: null for an absent value. */
function json(value: object | undefined): string | null {
  return value ? JSON.stringify(value) : null;
}

/**
 * The default Store: one SQLite file in WAL mode, migrated on open.
 * better-sqlite3 is synchronous: each method does its work before its
 * Promise is returned, so a write is committed by the time a caller awaits it
 * and calls made in one turn still apply in the order they were made.
 */
export class SqliteStore implements Store {
  readonly #db: Database.Database;

  constructor(file: string) {
    this.#db = openSqlite(file, MIGRATIONS);
  }

  async insertSandbox(rec: SandboxRecord): Promise<void> {
    this.#db
      .prepare('INSERT INTO sandboxes (id, template, template_id, state, limits, env, metadata, created_at, error, forked_from, resume_from, policy, instance, lost, recovered, origin, idmap, network, base, defaults) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(
        rec.id,
        rec.template,
        rec.templateId,
        rec.state,
        JSON.stringify(rec.limits),
        JSON.stringify(rec.env),
        JSON.stringify(rec.metadata),
        rec.createdAt,
        rec.error ?? null,
        rec.forkedFrom ?? null,
        rec.resumeFrom ?? null,
        json(rec.policy),
        rec.instance ?? null,
        json(rec.lost),
        json(rec.recovered),
        json(rec.origin),
        rec.idmap ?? null,
        json(rec.network),
        rec.base ?? null,
        json(rec.defaults),
      );
  }

  async transition(id: string, from: SandboxRecord['state'], to: SandboxRecord['state'], error?: string): Promise<boolean> {
    const r = this.#db.prepare('UPDATE sandboxes SET state = ?, error = ? WHERE id = ? AND state = ?').run(to, error ?? null, id, from);
    return r.changes === 1;
  }

  async getSandbox(id: string): Promise<SandboxRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM sandboxes WHERE id = ?').get(id) as SandboxRow | undefined;
    return r ? toRecord(r) : undefined;
  }

  async listSandboxes(): Promise<SandboxRecord[]> {
    return (this.#db.prepare('SELECT * FROM sandboxes ORDER BY created_at, id').all() as SandboxRow[]).map(toRecord);
  }

  async deleteSandbox(id: string): Promise<void> {
    this.#db.prepare('DELETE FROM sandboxes WHERE id = ?').run(id);
  }

  async setPolicy(id: string, policy: SandboxPolicy | undefined): Promise<void> {
    this.#db.prepare('UPDATE sandboxes SET policy = ? WHERE id = ?').run(policy ? JSON.stringify(policy) : null, id);
  }

  async setResumeFrom(id: string, snapshotId: string | undefined): Promise<void> {
    this.#db.prepare('UPDATE sandboxes SET resume_from = ? WHERE id = ?').run(snapshotId ?? null, id);
  }

  async setInstance(id: string, instance: string, origin?: SandboxOrigin): Promise<void> {
    const key = instance === id ? null : instance;
    if (origin) this.#db.prepare('UPDATE sandboxes SET instance = ?, origin = ? WHERE id = ?').run(key, JSON.stringify(origin), id);
    else this.#db.prepare('UPDATE sandboxes SET instance = ? WHERE id = ?').run(key, id);
  }

  async setNetwork(id: string, network: NetworkRules | undefined): Promise<void> {
    this.#db.prepare('UPDATE sandboxes SET network = ? WHERE id = ?').run(json(network), id);
  }

  async setIdmap(id: string, hostId: number | undefined): Promise<void> {
    this.#db.prepare('UPDATE sandboxes SET idmap = ? WHERE id = ?').run(hostId ?? null, id);
  }

  async setOrigin(id: string, origin: SandboxOrigin | undefined): Promise<void> {
    this.#db.prepare('UPDATE sandboxes SET origin = ? WHERE id = ?').run(origin ? JSON.stringify(origin) : null, id);
  }

  async setLost(id: string, lost: SandboxLoss | undefined): Promise<void> {
    this.#db.prepare('UPDATE sandboxes SET lost = ? WHERE id = ?').run(lost ? JSON.stringify(lost) : null, id);
  }

  async setRecovered(id: string, recovered: SandboxRecovery | undefined): Promise<void> {
    this.#db.prepare('UPDATE sandboxes SET recovered = ? WHERE id = ?').run(recovered ? JSON.stringify(recovered) : null, id);
  }

  async insertSnapshot(rec: SnapshotRecord): Promise<void> {
    this.#db
      .prepare('INSERT INTO snapshots (id, sandbox_id, name, created_at, frozen_ms, size_bytes, parent_id, pinned, reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)')
      .run(rec.id, rec.sandboxId, rec.name ?? null, rec.createdAt, rec.frozenMs, rec.sizeBytes, rec.parentId ?? null, rec.pinned ? 1 : 0, rec.reason);
  }

  async getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM snapshots WHERE id = ?').get(id) as SnapshotRow | undefined;
    return r ? toSnapshot(r) : undefined;
  }

  async setSnapshotSize(id: string, bytes: number): Promise<void> {
    this.#db.prepare('UPDATE snapshots SET size_bytes = ? WHERE id = ?').run(bytes, id);
  }

  async setPinned(id: string, pinned: boolean): Promise<void> {
    this.#db.prepare('UPDATE snapshots SET pinned = ? WHERE id = ?').run(pinned ? 1 : 0, id);
  }

  async snapshotTotals(): Promise<{ count: number; bytes: number }> {
    const r = this.#db.prepare('SELECT COUNT(*) AS count, COALESCE(SUM(size_bytes), 0) AS bytes FROM snapshots').get() as { count: number; bytes: number };
    return { count: r.count, bytes: r.bytes };
  }

  async listSnapshots(sandboxId: string): Promise<SnapshotRecord[]> {
    return (this.#db.prepare('SELECT * FROM snapshots WHERE sandbox_id = ? ORDER BY created_at, rowid').all(sandboxId) as SnapshotRow[]).map(toSnapshot);
  }

  async lastSnapshot(sandboxId: string): Promise<SnapshotRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM snapshots WHERE sandbox_id = ? ORDER BY created_at DESC, rowid DESC LIMIT 1').get(sandboxId) as SnapshotRow | undefined;
    return r && toSnapshot(r);
  }

  async deleteSnapshot(id: string): Promise<void> {
    this.#db.prepare('DELETE FROM snapshots WHERE id = ?').run(id);
  }

  async listForks(snapshotId: string): Promise<SandboxRecord[]> {
    return (this.#db.prepare('SELECT * FROM sandboxes WHERE forked_from = ? ORDER BY created_at, id').all(snapshotId) as SandboxRow[]).map(toRecord);
  }

  async upsertTemplate(rec: TemplateRecord): Promise<void> {
    this.#db
      .prepare(
        'INSERT INTO templates (id, name, created_at, volume, images, from_template, idmap, image) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT(name) DO UPDATE SET id = excluded.id, created_at = excluded.created_at, volume = excluded.volume, images = excluded.images, from_template = excluded.from_template, idmap = excluded.idmap, image = excluded.image',
      )
      .run(rec.id, rec.name, rec.createdAt, rec.volume, rec.images ?? null, rec.from ?? null, rec.idmap ?? null, json(rec.image));
  }

  async getTemplate(name: string): Promise<TemplateRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM templates WHERE name = ?').get(name) as TemplateRow | undefined;
    return r ? toTemplate(r) : undefined;
  }

  async listTemplates(): Promise<TemplateRecord[]> {
    return (this.#db.prepare('SELECT * FROM templates ORDER BY name').all() as TemplateRow[]).map(toTemplate);
  }

  async deleteTemplate(name: string): Promise<void> {
    this.#db.prepare('DELETE FROM templates WHERE name = ?').run(name);
  }

  async close(): Promise<void> {
    this.#db.close();
  }
}
