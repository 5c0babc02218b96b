import type { FileEntry } from '@forkd/protocol';
import type { ApiClient } from '../api.js';
import { sandboxPath } from './sandboxes.js';

export async function listDir(api: ApiClient, id: string, path: string): Promise<FileEntry[]> {
  return (await api.get<{ entries: FileEntry[] }>(`${sandboxPath(id)}/files/list`, { path })).entries;
}

export async function uploadFile(api: ApiClient, id: string, path: string, body: Blob): Promise<{ path: string; size: number }> {
  return api.json('PUT', `${sandboxPath(id)}/files`, { query: { path }, body });
}

export async function downloadFile(api: ApiClient, id: string, path: string): Promise<Blob> {
  return (await api.request('GET', `${sandboxPath(id)}/files`, { query: { path } })).blob();
}

/** `/a/b` + `c` → `/a/b/c`; the parent of `/a/b` is `/a`, of `/` is `/`. */
export function joinPath(dir: string, name: string): string {
  return `${dir.replace(/\/+$/, '')}/${name}`;
}

export function parentPath(path: string): string {
  const p = path.replace(/\/+$/, '');
  const at = p.lastIndexOf('/');
  return at <= 0 ? '/' : p.slice(0, at);
}
