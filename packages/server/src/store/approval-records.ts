import type { ApprovalInfo } from '@forkd/protocol';

export type ApprovalDecision = 'approved' | 'denied';

/**
 * Calls waiting for approval, in the control store, so an approver's answer
 * reaches the call through whichever control-plane replica it is sent to
 * (control-plane/policy/approvals.ts). A row lives while its call waits;
 * one past its `expiresAt` is neither listed nor decided.
 */
export interface ApprovalRecords {
  putApproval(info: ApprovalInfo): Promise<void>;
  /** Undecided, unexpired calls, oldest first: one tenant's, or every tenant's (undefined). */
  pendingApprovals(tenant: string | undefined, now: string): Promise<ApprovalInfo[]>;
  /** Decides an undecided, unexpired call (of `tenant`, when given) once; undefined when there is none. */
  decideApproval(id: string, decision: ApprovalDecision, tenant: string | undefined, now: string): Promise<ApprovalInfo | undefined>;
  /** The decisions made so far among `ids`. */
  approvalDecisions(ids: readonly string[]): Promise<Map<string, ApprovalDecision>>;
  dropApproval(id: string): Promise<void>;
}
