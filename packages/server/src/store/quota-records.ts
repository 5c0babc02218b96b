import type { TenantUsage } from '@forkd/protocol';

/** Capacity an operation in flight took from its tenant's quota, until it is done or its time runs out. */
export interface QuotaReservationRecord {
  id: string;
  tenant: string;
  demand: TenantUsage;
  /** Sandboxes the operation made: counted by the reservation, not by their records (no double count). */
  sandboxIds: string[];
}

/**
 * Reservations in the control store, so every control-plane replica counts
 * what the others have in flight (control-plane/quota/tenant-quotas.ts). A
 * reservation expires `ttlMs` after it was made, by the database's clock: a
 * replica that dies mid-operation frees its tenant's quota by itself.
 */
export interface QuotaRecords {
  putReservation(r: Omit<QuotaReservationRecord, 'sandboxIds'>, ttlMs: number): Promise<void>;
  /** The tenant's unexpired reservations. */
  reservations(tenant: string): Promise<QuotaReservationRecord[]>;
  bindReservation(id: string, sandboxId: string): Promise<void>;
  dropReservation(id: string): Promise<void>;
}
