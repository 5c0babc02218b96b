import type { CreatedKey, CreateKeyRequest, KeyInfo, NodeInfo, PutTenantLimitsRequest, SandboxInfo, TenantLimitsInfo } from '@forkd/protocol';
import type { ApiClient } from '../api.js';

/**
 * Whether the client's key is an admin's. The API has no "who am I", and asking what
 * only admins may ask would log a refused call in the browser for every
 * tenant key, so the console reads the key list (allowed to every key, and
 * always holding the caller's own key): the keys whose shown prefix starts
 * this key are all admin keys, or none is. Prefixes are short, so when both
 * kinds share this one it asks the admin-only listing after all.
 */
export async function isAdminKey(api: ApiClient): Promise<boolean> {
  const mine = (await listKeys(api)).filter((k) => !k.revokedAt && api.keyHasPrefix(k.prefix));
  const verdict = adminByPrefix(mine);
  if (verdict !== undefined) return verdict;
  try {
    await api.get('/v1/sandboxes', { allTenants: true, limit: 1 });
    return true;
  } catch (err) {
    if ((err as { code?: string }).code === 'PERMISSION_DENIED') return false;
    throw err;
  }
}

/** The keys that may be the caller's: all admin (true), none (false), or both kinds (undefined: cannot tell). */
export function adminByPrefix(candidates: readonly Pick<KeyInfo, 'admin'>[]): boolean | undefined {
  if (candidates.every((k) => k.admin) && candidates.length) return true;
  if (candidates.every((k) => !k.admin)) return false;
  return undefined;
}

/** Every tenant's sandboxes, each with its `tenant` (admin keys). */
export async function allSandboxes(api: ApiClient): Promise<SandboxInfo[]> {
  return (await api.get<{ sandboxes: SandboxInfo[] }>('/v1/sandboxes', { allTenants: true })).sandboxes;
}

export async function listKeys(api: ApiClient): Promise<KeyInfo[]> {
  return (await api.get<{ keys: KeyInfo[] }>('/v1/keys')).keys;
}

export const createKey = (api: ApiClient, req: CreateKeyRequest) => api.post<CreatedKey>('/v1/keys', req);
export const revokeKey = (api: ApiClient, id: string) => api.delete(`/v1/keys/${encodeURIComponent(id)}`);
const limitsPath = (tenant: string) => `/v1/tenants/${encodeURIComponent(tenant)}/limits`;
export const tenantLimits = (api: ApiClient, tenant: string) => api.get<TenantLimitsInfo>(limitsPath(tenant));
/** Replaces the tenant's overrides whole (absent: the server's default; null: none). */
export const setTenantLimits = (api: ApiClient, tenant: string, limits: PutTenantLimitsRequest) => api.json<TenantLimitsInfo>('PUT', limitsPath(tenant), { json: limits });

/** The fleet's nodes; undefined on a server that serves one node (the API answers FAILED_PRECONDITION there). */
export async function listNodes(api: ApiClient): Promise<NodeInfo[] | undefined> {
  try {
    return (await api.get<{ nodes: NodeInfo[] }>('/v1/nodes')).nodes;
  } catch (err) {
    if ((err as { code?: string }).code === 'FAILED_PRECONDITION') return undefined;
    throw err;
  }
}
