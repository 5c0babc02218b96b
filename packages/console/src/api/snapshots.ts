import type { SandboxInfo, SnapshotInfo } from '@forkd/protocol';
import type { ApiClient } from '../api.js';
import { sandboxPath } from './sandboxes.js';

/** `GET /v1/sandboxes/{id}/tree`: a sandbox and, recursively, the sandboxes forked from its snapshots. */
export interface ForkTree {
  sandbox: SandboxInfo;
  children: ForkTree[];
}

const snapPath = (snap: string) => `/v1/snapshots/${encodeURIComponent(snap)}`;

/** The sandbox's timeline, oldest first. */
export async function listSnapshots(api: ApiClient, id: string): Promise<SnapshotInfo[]> {
  return (await api.get<{ snapshots: SnapshotInfo[] }>(`${sandboxPath(id)}/snapshots`)).snapshots;
}

export const takeSnapshot = (api: ApiClient, id: string, name?: string) => api.post<SnapshotInfo>(`${sandboxPath(id)}/snapshots`, name ? { name } : {});
export const getSnapshot = (api: ApiClient, snap: string) => api.get<SnapshotInfo>(snapPath(snap));
export const pinSnapshot = (api: ApiClient, snap: string, pinned: boolean) => api.post<SnapshotInfo>(`${snapPath(snap)}/pin`, { pinned });
export const deleteSnapshot = (api: ApiClient, snap: string) => api.delete(snapPath(snap));
export const rewindSandbox = (api: ApiClient, id: string, snapshot: string) => api.post<SandboxInfo>(`${sandboxPath(id)}/rewind`, { snapshot });
export const forkTree = (api: ApiClient, id: string) => api.get<ForkTree>(`${sandboxPath(id)}/tree`);

export async function forkSnapshot(api: ApiClient, snap: string, count: number): Promise<SandboxInfo[]> {
  return (await api.post<{ sandboxes: SandboxInfo[] }>(`${snapPath(snap)}/fork`, { count })).sandboxes;
}
