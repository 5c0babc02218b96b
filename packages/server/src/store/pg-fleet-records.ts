import type { ExportRecord, FleetStore, NodeRecord, NodeState, PlacedKind } from '../fleet/fleet-store.js';
import type { Sql } from './pg-open.js';
import { toExport, toNode, type ExportRow, type NodeRow } from './sqlite-fleet-records.js';

/** FleetStore over PostgreSQL (tables of pg-migrations.ts); rows have SQLite's shape, so its mappers serve. */
export class PgFleetRecords implements FleetStore {
  readonly #sql: Sql;

  constructor(sql: Sql) {
    this.#sql = sql;
  }

  async upsertNode(n: NodeRecord): Promise<void> {
    await this.#sql`INSERT INTO nodes (id, url, sealed_token, state, capacity, registered_at, last_seen_at)
      VALUES (${n.id}, ${n.url}, ${n.sealedToken}, ${n.state}, ${JSON.stringify(n.capacity)}, ${n.registeredAt}, ${n.lastSeenAt})
      ON CONFLICT (id) DO UPDATE SET url = excluded.url, sealed_token = excluded.sealed_token, state = excluded.state,
        capacity = excluded.capacity, registered_at = excluded.registered_at, last_seen_at = excluded.last_seen_at`;
  }

  async node(id: string): Promise<NodeRecord | undefined> {
    const [r] = await this.#sql<NodeRow[]>`SELECT * FROM nodes WHERE id = ${id}`;
    return r && toNode(r);
  }

  async listNodes(): Promise<NodeRecord[]> {
    return (await this.#sql<NodeRow[]>`SELECT * FROM nodes ORDER BY id`).map(toNode);
  }

  async setNodeState(id: string, state: NodeState): Promise<boolean> {
    return (await this.#sql`UPDATE nodes SET state = ${state} WHERE id = ${id}`).count === 1;
  }

  async removeNode(id: string): Promise<void> {
    await this.#sql`DELETE FROM nodes WHERE id = ${id}`;
  }

  async place(kind: PlacedKind, id: string, node: string): Promise<void> {
    await this.#sql`INSERT INTO placements (kind, id, node) VALUES (${kind}, ${id}, ${node}) ON CONFLICT (kind, id) DO UPDATE SET node = excluded.node`;
  }

  async placement(kind: PlacedKind, id: string): Promise<string | undefined> {
    const [r] = await this.#sql<{ node: string }[]>`SELECT node FROM placements WHERE kind = ${kind} AND id = ${id}`;
    return r?.node;
  }

  async placedOn(kind: PlacedKind, node: string): Promise<string[]> {
    return (await this.#sql<{ id: string }[]>`SELECT id FROM placements WHERE node = ${node} AND kind = ${kind} ORDER BY id`).map((r) => r.id);
  }

  async unplace(kind: PlacedKind, id: string): Promise<void> {
    await this.#sql`DELETE FROM placements WHERE kind = ${kind} AND id = ${id}`;
  }

  async recordExport(e: ExportRecord): Promise<void> {
    await this.#sql`INSERT INTO exports (snapshot_id, sandbox_id, manifest, node, exported_at)
      VALUES (${e.snapshotId}, ${e.sandboxId}, ${e.manifest}, ${e.node}, ${e.exportedAt})
      ON CONFLICT (snapshot_id) DO UPDATE SET sandbox_id = excluded.sandbox_id, manifest = excluded.manifest, node = excluded.node, exported_at = excluded.exported_at`;
  }

  async latestExport(sandboxId: string): Promise<ExportRecord | undefined> {
    const [r] = await this.#sql<ExportRow[]>`SELECT * FROM exports WHERE sandbox_id = ${sandboxId} ORDER BY exported_at DESC, snapshot_id DESC LIMIT 1`;
    return r && toExport(r);
  }

  async exportOf(snapshotId: string): Promise<ExportRecord | undefined> {
    const [r] = await this.#sql<ExportRow[]>`SELECT * FROM exports WHERE snapshot_id = ${snapshotId}`;
    return r && toExport(r);
  }

  /**
   * A row per lease rather than advisory locks: an advisory lock lives as
   * long as its session, so a replica whose connection hangs (not closed)
   * would hold it for TCP's timeouts, and a pool hands out other sessions;
   * a row expires by the server's clock after ttlMs whatever the holder does.
   */
  async tryLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const rows = await this.#sql`INSERT INTO leases (name, holder, expires_at) VALUES (${name}, ${holder}, now() + ${ttlMs}::double precision * interval '1 millisecond')
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
      WHERE leases.holder = excluded.holder OR leases.expires_at <= now()
      RETURNING holder`;
    return rows.length === 1;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    await this.#sql`DELETE FROM leases WHERE name = ${name} AND holder = ${holder}`;
  }
}
