import type Database from 'better-sqlite3';
import type { TemplateBuildLog, TemplateBuildRecord, TemplateBuildRecords, TemplateBuildStatus, TemplateTagRecord } from './template-build-records.js';

export const TEMPLATE_BUILD_MIGRATION = `CREATE TABLE template_builds (
     id TEXT PRIMARY KEY,
     tenant TEXT NOT NULL,
     template TEXT NOT NULL,
     record TEXT NOT NULL,
     status TEXT NOT NULL,
     reason TEXT,
     created_at TEXT NOT NULL,
     updated_at TEXT NOT NULL
   );
   CREATE TABLE template_build_logs (
     build_id TEXT NOT NULL,
     seq INTEGER NOT NULL,
     entry TEXT NOT NULL,
     PRIMARY KEY (build_id, seq)
   );
   CREATE TABLE template_files (
     tenant TEXT NOT NULL,
     hash TEXT NOT NULL,
     data BLOB NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (tenant, hash)
   );
   CREATE TABLE template_tags (
     template TEXT NOT NULL,
     tag TEXT NOT NULL,
     tenant TEXT NOT NULL,
     build_id TEXT NOT NULL,
     created_at TEXT NOT NULL,
     PRIMARY KEY (template, tag)
   );`;

type BuildRow = { record: string | TemplateBuildRecord; status: TemplateBuildStatus; reason: string | null; updated_at: string };
type TagRow = { template: string; tag: string; tenant: string; build_id: string; created_at: string };

/** A build row of either database (PostgreSQL hands jsonb back parsed); status, reason and updatedAt live in their own columns. */
export function toTemplateBuild(r: BuildRow): TemplateBuildRecord {
  const rec = typeof r.record === 'string' ? (JSON.parse(r.record) as TemplateBuildRecord) : r.record;
  const reason = r.reason === null ? undefined : (JSON.parse(r.reason) as TemplateBuildRecord['reason']);
  return { ...rec, status: r.status, updatedAt: r.updated_at, ...(reason ? { reason } : {}) };
}

/** What the record column keeps: the fields a build never changes. */
export function staticFields(b: TemplateBuildRecord): Omit<TemplateBuildRecord, 'status' | 'reason' | 'updatedAt'> {
  const { status: _s, reason: _r, updatedAt: _u, ...rest } = b;
  return rest;
}

export const toTemplateTag = (r: TagRow): TemplateTagRecord => ({ template: r.template, tag: r.tag, tenant: r.tenant, buildId: r.build_id, createdAt: r.created_at });
export const toBuildLog = (e: string | TemplateBuildLog): TemplateBuildLog => (typeof e === 'string' ? (JSON.parse(e) as TemplateBuildLog) : e);

export class SqliteTemplateBuildRecords implements TemplateBuildRecords {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  async putTemplateBuild(b: TemplateBuildRecord): Promise<void> {
    this.#db
      .prepare('INSERT INTO template_builds (id, tenant, template, record, status, reason, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
      .run(b.id, b.tenant, b.template, JSON.stringify(staticFields(b)), b.status, b.reason ? JSON.stringify(b.reason) : null, b.createdAt, b.updatedAt);
  }

  async templateBuild(id: string): Promise<TemplateBuildRecord | undefined> {
    const r = this.#db.prepare('SELECT record, status, reason, updated_at FROM template_builds WHERE id = ?').get(id) as BuildRow | undefined;
    return r && toTemplateBuild(r);
  }

  async setTemplateBuildStatus(id: string, from: readonly TemplateBuildStatus[], status: TemplateBuildStatus, reason: TemplateBuildRecord['reason'], at: string): Promise<boolean> {
    if (from.length === 0) return false;
    const r = this.#db
      .prepare(`UPDATE template_builds SET status = ?, updated_at = ?, reason = ? WHERE id = ? AND status IN (${from.map(() => '?').join(', ')})`)
      .run(status, at, reason ? JSON.stringify(reason) : null, id, ...from);
    return r.changes === 1;
  }

  async appendTemplateBuildLogs(id: string, entries: readonly TemplateBuildLog[], at: string): Promise<void> {
    this.#db.transaction(() => {
      const next = (this.#db.prepare('SELECT COALESCE(MAX(seq) + 1, 0) AS n FROM template_build_logs WHERE build_id = ?').get(id) as { n: number }).n;
      const put = this.#db.prepare('INSERT INTO template_build_logs (build_id, seq, entry) VALUES (?, ?, ?)');
      entries.forEach((e, i) => put.run(id, next + i, JSON.stringify(e)));
      this.#db.prepare('UPDATE template_builds SET updated_at = ? WHERE id = ?').run(at, id);
    })();
  }

  async templateBuildLogs(id: string, offset: number, limit: number): Promise<TemplateBuildLog[]> {
    const rows = this.#db.prepare('SELECT entry FROM template_build_logs WHERE build_id = ? AND seq >= ? ORDER BY seq LIMIT ?').all(id, offset, limit) as { entry: string }[];
    return rows.map((r) => toBuildLog(r.entry));
  }

  async putTemplateFile(tenant: string, hash: string, data: Buffer, at: string): Promise<void> {
    this.#db.prepare('INSERT INTO template_files (tenant, hash, data, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (tenant, hash) DO UPDATE SET data = excluded.data, created_at = excluded.created_at').run(tenant, hash, data, at);
  }

  async templateFile(tenant: string, hash: string): Promise<Buffer | undefined> {
    const r = this.#db.prepare('SELECT data FROM template_files WHERE tenant = ? AND hash = ?').get(tenant, hash) as { data: Buffer } | undefined;
    return r?.data;
  }

  async hasTemplateFile(tenant: string, hash: string): Promise<boolean> {
    return this.#db.prepare('SELECT 1 FROM template_files WHERE tenant = ? AND hash = ?').get(tenant, hash) !== undefined;
  }

  async setTemplateTag(t: TemplateTagRecord): Promise<void> {
    this.#db
      .prepare('INSERT INTO template_tags (template, tag, tenant, build_id, created_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (template, tag) DO UPDATE SET tenant = excluded.tenant, build_id = excluded.build_id, created_at = excluded.created_at')
      .run(t.template, t.tag, t.tenant, t.buildId, t.createdAt);
  }

  async dropTemplateTags(template: string, tags: readonly string[]): Promise<number> {
    if (tags.length === 0) return 0;
    return this.#db.prepare(`DELETE FROM template_tags WHERE template = ? AND tag IN (${tags.map(() => '?').join(', ')})`).run(template, ...tags).changes;
  }

  async templateTags(template: string): Promise<TemplateTagRecord[]> {
    return (this.#db.prepare('SELECT template, tag, tenant, build_id, created_at FROM template_tags WHERE template = ? ORDER BY created_at, tag').all(template) as TagRow[]).map(toTemplateTag);
  }

  async activeTemplateBuilds(tenant: string, since: { waiting: string; building: string }): Promise<number> {
    return (
      this.#db
        .prepare("SELECT COUNT(*) AS n FROM template_builds WHERE tenant = ? AND ((status = 'waiting' AND updated_at >= ?) OR (status = 'building' AND updated_at >= ?))")
        .get(tenant, since.waiting, since.building) as { n: number }
    ).n;
  }

  async templateFileBytes(tenant: string): Promise<number> {
    return (this.#db.prepare('SELECT COALESCE(SUM(length(data)), 0) AS n FROM template_files WHERE tenant = ?').get(tenant) as { n: number }).n;
  }

  async pruneTemplateBuilds(before: string): Promise<void> {
    this.#db.transaction(() => {
      this.#db.prepare('DELETE FROM template_build_logs WHERE build_id IN (SELECT id FROM template_builds WHERE updated_at < ?)').run(before);
      this.#db.prepare('DELETE FROM template_builds WHERE updated_at < ?').run(before);
      this.#db.prepare('DELETE FROM template_files WHERE created_at < ?').run(before);
    })();
  }
}
