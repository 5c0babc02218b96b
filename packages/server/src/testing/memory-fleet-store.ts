import type { ExportRecord, FleetStore, NodeRecord, NodeState, PlacedKind } from '../fleet/fleet-store.js';

/** A FleetStore in memory, for unit tests of the fleet's logic (the real ones pass fleetStoreConformance). */
export class MemoryFleetStore implements FleetStore {
  readonly #nodes = new Map<string, NodeRecord>();
  readonly #placed = new Map<string, string>();
  readonly #exports = new Map<string, ExportRecord>();
  readonly #leases = new Map<string, { holder: string; until: number }>();
  now: () => number = Date.now;

  async upsertNode(rec: NodeRecord): Promise<void> {
    this.#nodes.set(rec.id, structuredClone(rec));
  }
  async node(id: string): Promise<NodeRecord | undefined> {
    const n = this.#nodes.get(id);
    return n && structuredClone(n);
  }
  async listNodes(): Promise<NodeRecord[]> {
    return [...this.#nodes.values()].sort((a, b) => (a.id < b.id ? -1 : 1)).map((n) => structuredClone(n));
  }
  async setNodeState(id: string, state: NodeState): Promise<boolean> {
    const n = this.#nodes.get(id);
    if (n) n.state = state;
    return !!n;
  }
  async removeNode(id: string): Promise<void> {
    this.#nodes.delete(id);
  }
  async place(kind: PlacedKind, id: string, node: string): Promise<void> {
    this.#placed.set(`${kind}:${id}`, node);
  }
  async placement(kind: PlacedKind, id: string): Promise<string | undefined> {
    return this.#placed.get(`${kind}:${id}`);
  }
  async placedOn(kind: PlacedKind, node: string): Promise<string[]> {
    const out: string[] = [];
    for (const [k, n] of this.#placed) if (n === node && k.startsWith(`${kind}:`)) out.push(k.slice(kind.length + 1));
    return out.sort();
  }
  async unplace(kind: PlacedKind, id: string): Promise<void> {
    this.#placed.delete(`${kind}:${id}`);
  }
  async recordExport(rec: ExportRecord): Promise<void> {
    this.#exports.set(rec.snapshotId, { ...rec });
  }
  async latestExport(sandboxId: string): Promise<ExportRecord | undefined> {
    return [...this.#exports.values()].filter((e) => e.sandboxId === sandboxId).sort((a, b) => (a.exportedAt < b.exportedAt ? 1 : -1))[0];
  }
  async exportOf(snapshotId: string): Promise<ExportRecord | undefined> {
    return this.#exports.get(snapshotId);
  }
  async tryLease(name: string, holder: string, ttlMs: number): Promise<boolean> {
    const l = this.#leases.get(name);
    if (l && l.holder !== holder && l.until > this.now()) return false;
    this.#leases.set(name, { holder, until: this.now() + ttlMs });
    return true;
  }
  async releaseLease(name: string, holder: string): Promise<void> {
    if (this.#leases.get(name)?.holder === holder) this.#leases.delete(name);
  }
}
