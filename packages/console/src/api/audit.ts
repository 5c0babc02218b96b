import type { AuditRecord } from '@forkd/protocol';
import type { ApiClient } from '../api.js';

/** The newest audit records of one sandbox (the key's tenant's only, as the API scopes them). */
export async function sandboxAudit(api: ApiClient, id: string, limit = 50): Promise<AuditRecord[]> {
  return (await api.get<{ records: AuditRecord[] }>('/v1/audit', { sandbox: id, limit })).records;
}
