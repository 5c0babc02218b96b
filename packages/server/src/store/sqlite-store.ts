import Database from 'better-sqlite3';
import type { SandboxRecord, Store, TemplateRecord } from './store.js';

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
];

interface SandboxRow {
  id: string;
  template: string;
  state: SandboxRecord['state'];
  limits: string;
  env: string;
  metadata: string;
  created_at: string;
  error: string | null;
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
  };
}

/** The default Store: one SQLite file in WAL mode, migrated on open. */
export class SqliteStore implements Store {
  readonly #db: Database.Database;

  constructor(file: string) {
    this.#db = new Database(file);
    this.#db.pragma('journal_mode = WAL');
    this.#db.pragma('synchronous = NORMAL');
    this.#db.pragma('busy_timeout = 5000');
    const version = this.#db.pragma('user_version', { simple: true }) as number;
    for (let v = version; v < MIGRATIONS.length; v++) {
      this.#db.transaction(() => {
        this.#db.exec(MIGRATIONS[v]!);
        this.#db.pragma(`user_version = ${v + 1}`);
      })();
    }
  }

  insertSandbox(rec: SandboxRecord): void {
    this.#db
      .prepare('INSERT INTO sandboxes (id, template, state, limits, env, metadata, created_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(rec.id, rec.template, rec.state, JSON.stringify(rec.limits), JSON.stringify(rec.env), JSON.stringify(rec.metadata), rec.createdAt, rec.error ?? null);
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

  upsertTemplate(rec: TemplateRecord): void {
    this.#db.prepare('INSERT INTO templates (name, created_at, volume) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE SET created_at = excluded.created_at, volume = excluded.volume').run(rec.name, rec.createdAt, rec.volume);
  }

  getTemplate(name: string): TemplateRecord | undefined {
    const r = this.#db.prepare('SELECT name, created_at AS createdAt, volume FROM templates WHERE name = ?').get(name) as TemplateRecord | undefined;
    return r;
  }

  listTemplates(): TemplateRecord[] {
    return this.#db.prepare('SELECT name, created_at AS createdAt, volume FROM templates ORDER BY name').all() as TemplateRecord[];
  }

  deleteTemplate(name: string): void {
    this.#db.prepare('DELETE FROM templates WHERE name = ?').run(name);
  }

  close(): void {
    this.#db.close();
  }
}
