import type { GrantInfo } from '@forkd/protocol';
import type { ApiClient } from '../api.js';
import { sandboxPath } from './sandboxes.js';

export async function listGrants(api: ApiClient, id: string): Promise<GrantInfo[]> {
  return (await api.get<{ grants: GrantInfo[] }>(`${sandboxPath(id)}/grants`)).grants;
}

export const revokeGrant = (api: ApiClient, id: string, grant: string) => api.delete(`${sandboxPath(id)}/grants/${encodeURIComponent(grant)}`);
