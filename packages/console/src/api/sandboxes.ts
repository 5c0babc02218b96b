import type { CreateSandboxRequest, SandboxInfo, SandboxMetrics, SetNetworkRequest, TemplateInfo } from '@forkd/protocol';
import type { ApiClient } from '../api.js';

export interface SandboxFilter {
  /** Comma-separated states. */
  state?: string | undefined;
  /** URL-encoded `k=v&k2=v2` (every pair must match). */
  metadata?: string | undefined;
}

const base = (id: string) => `/v1/sandboxes/${encodeURIComponent(id)}`;

export async function listSandboxes(api: ApiClient, filter: SandboxFilter = {}, signal?: AbortSignal): Promise<SandboxInfo[]> {
  const r = await api.get<{ sandboxes: SandboxInfo[] }>('/v1/sandboxes', { state: filter.state || undefined, metadata: filter.metadata || undefined }, signal);
  return r.sandboxes;
}

export const getSandbox = (api: ApiClient, id: string) => api.get<SandboxInfo>(base(id));
export const createSandbox = (api: ApiClient, req: CreateSandboxRequest) => api.post<SandboxInfo>('/v1/sandboxes', req);
export const pauseSandbox = (api: ApiClient, id: string) => api.post<SandboxInfo>(`${base(id)}/pause`);
export const resumeSandbox = (api: ApiClient, id: string) => api.post<SandboxInfo>(`${base(id)}/resume`);
export const setSandboxNetwork = (api: ApiClient, id: string, req: SetNetworkRequest) => api.json<SandboxInfo>('PUT', `${base(id)}/network`, { json: req });
export const deleteSandbox = (api: ApiClient, id: string) => api.delete(base(id));
export const sandboxMetrics = (api: ApiClient, id: string, signal?: AbortSignal) => api.get<SandboxMetrics>(`${base(id)}/metrics`, undefined, signal);

export async function listTemplates(api: ApiClient): Promise<TemplateInfo[]> {
  return (await api.get<{ templates: TemplateInfo[] }>('/v1/templates')).templates;
}

export { base as sandboxPath };
