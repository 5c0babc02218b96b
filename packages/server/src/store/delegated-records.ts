import type { ExportRecord, FleetStore, NodeRecord, NodeState, PlacedKind } from '../fleet/fleet-store.js';
import type { GrantRecord, SecretRecord, SecretRecords } from './secret-records.js';
import type { QuotaRecords, QuotaReservationRecord } from './quota-records.js';
import type { ApprovalDecision, ApprovalRecords } from './approval-records.js';
import type { ApprovalInfo } from '@forkd/protocol';

/**
 * The part of a ControlStore each database keeps in a records class of its
 * own (sealed secrets and grants; the fleet; quota reservations; approvals), handed on as it is: said once
 * for the SQLite and the PostgreSQL stores, which extend it.
 */
export abstract class DelegatedRecords implements SecretRecords, FleetStore, QuotaRecords, ApprovalRecords {
  readonly #secrets: SecretRecords;
  readonly #fleet: FleetStore;
  readonly #quota: QuotaRecords;
  readonly #approvals: ApprovalRecords;

  constructor(secrets: SecretRecords, fleet: FleetStore, quota: QuotaRecords, approvals: ApprovalRecords) {
    this.#secrets = secrets;
    this.#fleet = fleet;
    this.#quota = quota;
    this.#approvals = approvals;
  }

  putSecret(tenant: string, name: string, sealed: Buffer, at: string): Promise<void> { return this.#secrets.putSecret(tenant, name, sealed, at); }
  secret(tenant: string, name: string): Promise<SecretRecord | undefined> { return this.#secrets.secret(tenant, name); }
  listSecrets(tenant: string): Promise<Omit<SecretRecord, 'sealed'>[]> { return this.#secrets.listSecrets(tenant); }
  deleteSecret(tenant: string, name: string): Promise<boolean> { return this.#secrets.deleteSecret(tenant, name); }
  insertGrant(g: GrantRecord): Promise<void> { return this.#secrets.insertGrant(g); }
  grants(sandboxId?: string): Promise<GrantRecord[]> { return this.#secrets.grants(sandboxId); }
  deleteGrant(id: string): Promise<boolean> { return this.#secrets.deleteGrant(id); }

  upsertNode(rec: NodeRecord): Promise<void> { return this.#fleet.upsertNode(rec); }
  node(id: string): Promise<NodeRecord | undefined> { return this.#fleet.node(id); }
  listNodes(): Promise<NodeRecord[]> { return this.#fleet.listNodes(); }
  setNodeState(id: string, state: NodeState): Promise<boolean> { return this.#fleet.setNodeState(id, state); }
  removeNode(id: string): Promise<void> { return this.#fleet.removeNode(id); }
  place(kind: PlacedKind, id: string, node: string): Promise<void> { return this.#fleet.place(kind, id, node); }
  placement(kind: PlacedKind, id: string): Promise<string | undefined> { return this.#fleet.placement(kind, id); }
  placedOn(kind: PlacedKind, node: string): Promise<string[]> { return this.#fleet.placedOn(kind, node); }
  unplace(kind: PlacedKind, id: string): Promise<void> { return this.#fleet.unplace(kind, id); }
  recordExport(rec: ExportRecord): Promise<void> { return this.#fleet.recordExport(rec); }
  latestExport(sandboxId: string): Promise<ExportRecord | undefined> { return this.#fleet.latestExport(sandboxId); }
  exportOf(snapshotId: string): Promise<ExportRecord | undefined> { return this.#fleet.exportOf(snapshotId); }
  tryLease(name: string, holder: string, ttlMs: number): Promise<boolean> { return this.#fleet.tryLease(name, holder, ttlMs); }
  releaseLease(name: string, holder: string): Promise<void> { return this.#fleet.releaseLease(name, holder); }

  putReservation(r: Omit<QuotaReservationRecord, 'sandboxIds'>, ttlMs: number): Promise<void> { return this.#quota.putReservation(r, ttlMs); }
  reservations(tenant: string): Promise<QuotaReservationRecord[]> { return this.#quota.reservations(tenant); }
  bindReservation(id: string, sandboxId: string): Promise<void> { return this.#quota.bindReservation(id, sandboxId); }
  dropReservation(id: string): Promise<void> { return this.#quota.dropReservation(id); }

  putApproval(info: ApprovalInfo): Promise<void> { return this.#approvals.putApproval(info); }
  pendingApprovals(tenant: string | undefined, now: string): Promise<ApprovalInfo[]> { return this.#approvals.pendingApprovals(tenant, now); }
  decideApproval(id: string, decision: ApprovalDecision, tenant: string | undefined, now: string): Promise<ApprovalInfo | undefined> { return this.#approvals.decideApproval(id, decision, tenant, now); }
  approvalDecisions(ids: readonly string[]): Promise<Map<string, ApprovalDecision>> { return this.#approvals.approvalDecisions(ids); }
  dropApproval(id: string): Promise<void> { return this.#approvals.dropApproval(id); }
}
