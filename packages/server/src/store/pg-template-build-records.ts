import type { Sql } from './pg-open.js';
import { staticFields, toBuildLog, toTemplateBuild, toTemplateTag } from './sqlite-template-build-records.js';
import type { TemplateBuildLog, TemplateBuildRecord, TemplateBuildRecords, TemplateBuildStatus, TemplateTagRecord } from './template-build-records.js';

/** TemplateBuildRecords over PostgreSQL (tables of pg-migrations.ts). */
export class PgTemplateBuildRecords implements TemplateBuildRecords {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async putTemplateBuild(b: TemplateBuildRecord): Promise<void> {
    await this.#sql`INSERT INTO template_builds (id, tenant, template, record, status, reason, created_at, updated_at)
      VALUES (${b.id}, ${b.tenant}, ${b.template}, ${JSON.stringify(staticFields(b))}::jsonb, ${b.status}, ${b.reason ? JSON.stringify(b.reason) : null}, ${b.createdAt}, ${b.updatedAt})`;
  }

  async templateBuild(id: string): Promise<TemplateBuildRecord | undefined> {
    const [r] = await this.#sql<{ record: TemplateBuildRecord; status: TemplateBuildStatus; reason: string | null; updated_at: string }[]>`SELECT record, status, reason, updated_at FROM template_builds WHERE id = ${id}`;
    return r && toTemplateBuild(r);
  }

  async setTemplateBuildStatus(id: string, from: readonly TemplateBuildStatus[], status: TemplateBuildStatus, reason: TemplateBuildRecord['reason'], at: string): Promise<boolean> {
    if (from.length === 0) return false;
    const r = await this.#sql`UPDATE template_builds SET status = ${status}, updated_at = ${at}, reason = ${reason ? JSON.stringify(reason) : null}
      WHERE id = ${id} AND status IN ${this.#sql([...from])}`;
    return r.count === 1;
  }

  async appendTemplateBuildLogs(id: string, entries: readonly TemplateBuildLog[], at: string): Promise<void> {
    await this.#sql.begin(async (tx) => {
      // One appender per build at a time (its runner); the row lock orders two that race anyway.
      await tx`SELECT 1 FROM template_builds WHERE id = ${id} FOR UPDATE`;
      const [row] = await tx<{ n: number }[]>`SELECT COALESCE(MAX(seq) + 1, 0)::int AS n FROM template_build_logs WHERE build_id = ${id}`;
      const n = row?.n ?? 0;
      for (const [i, e] of entries.entries()) await tx`INSERT INTO template_build_logs (build_id, seq, entry) VALUES (${id}, ${n + i}, ${JSON.stringify(e)}::jsonb)`;
      await tx`UPDATE template_builds SET updated_at = ${at} WHERE id = ${id}`;
    });
  }

  async templateBuildLogs(id: string, offset: number, limit: number): Promise<TemplateBuildLog[]> {
    const rows = await this.#sql<{ entry: TemplateBuildLog }[]>`SELECT entry FROM template_build_logs WHERE build_id = ${id} AND seq >= ${offset} ORDER BY seq LIMIT ${limit}`;
    return rows.map((r) => toBuildLog(r.entry));
  }

  async putTemplateFile(tenant: string, hash: string, data: Buffer, at: string): Promise<void> {
    await this.#sql`INSERT INTO template_files (tenant, hash, data, created_at) VALUES (${tenant}, ${hash}, ${data}, ${at})
      ON CONFLICT (tenant, hash) DO UPDATE SET data = excluded.data, created_at = excluded.created_at`;
  }

  async templateFile(tenant: string, hash: string): Promise<Buffer | undefined> {
    const [r] = await this.#sql<{ data: Buffer }[]>`SELECT data FROM template_files WHERE tenant = ${tenant} AND hash = ${hash}`;
    return r ? Buffer.from(r.data) : undefined;
  }

  async hasTemplateFile(tenant: string, hash: string): Promise<boolean> {
    return (await this.#sql`SELECT 1 FROM template_files WHERE tenant = ${tenant} AND hash = ${hash}`).length > 0;
  }

  async setTemplateTag(t: TemplateTagRecord): Promise<void> {
    await this.#sql`INSERT INTO template_tags (template, tag, tenant, build_id, created_at) VALUES (${t.template}, ${t.tag}, ${t.tenant}, ${t.buildId}, ${t.createdAt})
      ON CONFLICT (template, tag) DO UPDATE SET tenant = excluded.tenant, build_id = excluded.build_id, created_at = excluded.created_at`;
  }

  async dropTemplateTags(template: string, tags: readonly string[]): Promise<number> {
    if (tags.length === 0) return 0;
    return (await this.#sql`DELETE FROM template_tags WHERE template = ${template} AND tag IN ${this.#sql([...tags])}`).count;
  }

  async templateTags(template: string): Promise<TemplateTagRecord[]> {
    const rows = await this.#sql<{ template: string; tag: string; tenant: string; build_id: string; created_at: string }[]>`SELECT template, tag, tenant, build_id, created_at
      FROM template_tags WHERE template = ${template} ORDER BY created_at, tag`;
    return rows.map(toTemplateTag);
  }

  async activeTemplateBuilds(tenant: string, since: { waiting: string; building: string }): Promise<number> {
    const [r] = await this.#sql<{ n: number }[]>`SELECT COUNT(*)::int AS n FROM template_builds WHERE tenant = ${tenant}
      AND ((status = 'waiting' AND updated_at >= ${since.waiting}) OR (status = 'building' AND updated_at >= ${since.building}))`;
    return r?.n ?? 0;
  }

  async templateFileBytes(tenant: string): Promise<number> {
    const [r] = await this.#sql<{ n: string }[]>`SELECT COALESCE(SUM(octet_length(data)), 0)::text AS n FROM template_files WHERE tenant = ${tenant}`;
    return Number(r?.n ?? 0);
  }

  async pruneTemplateBuilds(before: string): Promise<void> {
    await this.#sql.begin(async (tx) => {
      await tx`DELETE FROM template_build_logs WHERE build_id IN (SELECT id FROM template_builds WHERE updated_at < ${before})`;
      await tx`DELETE FROM template_builds WHERE updated_at < ${before}`;
      await tx`DELETE FROM template_files WHERE created_at < ${before}`;
    });
  }
}
