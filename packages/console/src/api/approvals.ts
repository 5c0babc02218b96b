import type { ApprovalInfo } from '@forkd/protocol';
import type { ApiClient } from '../api.js';

/** The calls of the key's tenant waiting for an approver (every tenant's for an admin key). */
export async function listApprovals(api: ApiClient): Promise<ApprovalInfo[]> {
  return (await api.get<{ approvals: ApprovalInfo[] }>('/v1/approvals')).approvals;
}

/** Approves (the call runs) or denies (it ends with PERMISSION_DENIED) a waiting call. */
export const decideApproval = (api: ApiClient, id: string, approve: boolean) =>
  api.post<ApprovalInfo>(`/v1/approvals/${encodeURIComponent(id)}/${approve ? 'approve' : 'deny'}`);
