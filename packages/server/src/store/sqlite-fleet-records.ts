import type Database from 'better-sqlite3';
import type { ExportRecord, FleetStore, NodeRecord, NodeState, PlacedKind } from '../fleet/fleet-store.js';

export const FLEET_MIGRATION = `CREATE TABLE nodes (
     id TEXT PRIMARY KEY,
     url TEXT NOT NULL,
     sealed_token TEXT NOT NULL,
     state TEXT NOT NULL,
     capacity TEXT NOT NULL,
     registered_at TEXT NOT NULL,
     last_seen_at TEXT NOT NULL
   );
   CREATE TABLE placements (
     kind TEXT NOT NULL,
     id TEXT NOT NULL,
     node TEXT NOT NULL,
     PRIMARY KEY (kind, id)
   );
   CREATE INDEX placements_by_node ON placements (node, kind, id);
   CREATE TABLE exports (
     snapshot_id TEXT PRIMARY KEY,
     sandbox_id TEXT NOT NULL,
     manifest TEXT NOT NULL,
     node TEXT NOT NULL,
     exported_at TEXT NOT NULL
   );
   CREATE INDEX exports_by_sandbox ON exports (sandbox_id, exported_at);
   CREATE TABLE leases (
     name TEXT PRIMARY KEY,
     holder TEXT NOT NULL,
     expires_ms REAL NOT NULL
   );`;

/** SQLite's clock in Unix milliseconds: a lease's expiry is judged by the database, as PostgreSQL's now() is. */
const NOW_MS = `((julianday('now') - 2440587.5) * 86400000.0)`;

export interface NodeRow {
  id: string;
  url: string;
  sealed_token: string;
  state: string;
  capacity: string;
  registered_at: string;
  last_seen_at: string;
}

export function toNode(r: NodeRow): NodeRecord {
  return { id: r.id, url: r.url, sealedToken: r.sealed_token, state: r.state as NodeState, capacity: JSON.parse(r.capacity) as NodeRecord['capacity'], registeredAt: r.registered_at, lastSeenAt: r.last_seen_at };
}

export interface ExportRow {
  snapshot_id: string;
  sandbox_id: string;
  manifest: string;
  node: string;
  exported_at: string;
}

export function toExport(r: ExportRow): ExportRecord {
  return { snapshotId: r.snapshot_id, sandboxId: r.sandbox_id, manifest: r.manifest, node: r.node, exportedAt: r.exported_at };
}

/** FleetStore over the control store's SQLite database (tables of FLEET_MIGRATION). */
export class SqliteFleetRecords implements FleetStore {
  readonly #db: Database.Database;

  constructor(db: Database.Database) {
    this.#db = db;
  }

  async upsertNode(n: NodeRecord): Promise<void> {
    this.#db
      .prepare('INSERT OR REPLACE INTO nodes (id, url, sealed_token, state, capacity, registered_at, last_seen_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(n.id, n.url, n.sealedToken, n.state, JSON.stringify(n.capacity), n.registeredAt, n.lastSeenAt);
  }

  async node(id: string): Promise<NodeRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM nodes WHERE id = ?').get(id) as NodeRow | undefined;
    return r && toNode(r);
  }

  async listNodes(): Promise<NodeRecord[]> {
    return (this.#db.prepare('SELECT * FROM nodes ORDER BY id').all() as NodeRow[]).map(toNode);
  }

  async setNodeState(id: string, state: NodeState): Promise<boolean> {
    return this.#db.prepare('UPDATE nodes SET state = ? WHERE id = ?').run(state, id).changes === 1;
  }

  async removeNode(id: string): Promise<void> {
    this.#db.prepare('DELETE FROM nodes WHERE id = ?').run(id);
  }

  async place(kind: PlacedKind, id: string, node: string): Promise<void> {
    this.#db.prepare('INSERT OR REPLACE INTO placements (kind, id, node) VALUES (?, ?, ?)').run(kind, id, node);
  }

  async placement(kind: PlacedKind, id: string): Promise<string | undefined> {
    return (this.#db.prepare('SELECT node FROM placements WHERE kind = ? AND id = ?').get(kind, id) as { node: string } | undefined)?.node;
  }

  async placedOn(kind: PlacedKind, node: string): Promise<string[]> {
    return (this.#db.prepare('SELECT id FROM placements WHERE node = ? AND kind = ? ORDER BY id').all(node, kind) as { id: string }[]).map((r) => r.id);
  }

  async unplace(kind: PlacedKind, id: string): Promise<void> {
    this.#db.prepare('DELETE FROM placements WHERE kind = ? AND id = ?').run(kind, id);
  }

  async recordExport(e: ExportRecord): Promise<void> {
    this.#db
      .prepare('INSERT OR REPLACE INTO exports (snapshot_id, sandbox_id, manifest, node, exported_at) VALUES (?, ?, ?, ?, ?)')
      .run(e.snapshotId, e.sandboxId, e.manifest, e.node, e.exportedAt);
  }

  async latestExport(sandboxId: string): Promise<ExportRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM exports WHERE sandbox_id = ? ORDER BY exported_at DESC, snapshot_id DESC LIMIT 1').get(sandboxId) as ExportRow | undefined;
    return r && toExport(r);
  }

  async exportOf(snapshotId: string): Promise<ExportRecord | undefined> {
    const r = this.#db.prepare('SELECT * FROM exports WHERE snapshot_id = ?').get(snapshotId) as ExportRow | undefined;
    return r && toExport(r);
  }

  async tryLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    // One statement: taken when free or expired, renewed by its holder, else left alone (no row changed).
    const r = this.#db
      .prepare(`INSERT INTO leases (name, holder, expires_ms) VALUES (?, ?, ${NOW_MS} + ?)
        ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, expires_ms = excluded.expires_ms
        WHERE leases.holder = excluded.holder OR leases.expires_ms <= ${NOW_MS}`)
      .run(name, holder, ttlMs);
    return r.changes === 1;
  }

  async releaseLease(name: string, holder: string): Promise<void> {
    this.#db.prepare('DELETE FROM leases WHERE name = ? AND holder = ?').run(name, holder);
  }
}
