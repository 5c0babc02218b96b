import { posix } from 'node:path';
import type { FileEntry } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { e2bMetadata } from './e2b-file-metadata.js';

/** forkd's FileEntry as envd's EntryInfo (proto3 JSON). */

const FILE_TYPE: Record<FileEntry['type'], string> = { file: 'FILE_TYPE_FILE', dir: 'FILE_TYPE_DIRECTORY', symlink: 'FILE_TYPE_SYMLINK', other: 'FILE_TYPE_UNSPECIFIED' };

/** Go's FileMode.String() for the kinds forkd reports. */
export function permissionString(type: FileEntry['type'], mode: number): string {
  const kind = type === 'dir' ? 'd' : type === 'symlink' ? 'L' : type === 'other' ? '?' : '-';
  const rwx = 'rwxrwxrwx';
  let s = '';
  for (let i = 0; i < 9; i++) s += mode & (1 << (8 - i)) ? rwx[i] : '-';
  return kind + s;
}

/** Names the base template knows; others show as numbers, as envd does for unknown ids. */
function idName(n: number): string {
  return n === 0 ? 'root' : n === 1000 ? 'user' : String(n);
}

/**
 * A directory's size as envd reports it. envd stats ext4, where a directory's
 * st_size is its allocated blocks, never under one 4 KiB block; Btrfs counts
 * its entries' name bytes, 0 for an empty one. E2B's SDK test only asks a
 * directory's size to be above 0 (files/info.test.ts), so an empty
 * directory shows ext4's one block; any other size is Btrfs's own.
 */
function dirSize(size: number): number {
  return size > 0 ? size : 4096;
}

export function entryInfo(e: FileEntry, path = e.path, targetType?: FileEntry['type']): Record<string, unknown> {
  const type = e.type === 'symlink' ? (targetType ?? 'other') : e.type;
  return {
    name: posix.basename(path),
    type: FILE_TYPE[type],
    path,
    size: String(e.type === 'dir' ? dirSize(e.size) : e.size),
    mode: e.mode & 0o777,
    permissions: permissionString(e.type, e.mode),
    owner: idName(e.uid),
    group: idName(e.gid),
    modifiedTime: e.mtime,
    ...(e.type === 'symlink' && e.linkTarget !== undefined ? { symlinkTarget: posix.resolve(posix.dirname(path), e.linkTarget) } : {}),
    metadata: e2bMetadata(e.metadata),
  };
}

/** An entry with a symlink's target looked at (envd reports the target's type). */
export async function entryWithTarget(view: NodeService, id: string, e: FileEntry, path = e.path): Promise<Record<string, unknown>> {
  if (e.type !== 'symlink' || e.linkTarget === undefined) return entryInfo(e, path);
  const target = await view.stat(id, posix.resolve(posix.dirname(path), e.linkTarget)).catch(() => undefined);
  return entryInfo(e, path, target?.type === 'symlink' ? 'other' : target?.type);
}

/** envd's ListDir order: a lexical pre-order walk (each directory followed by its children). */
export function preorder(a: string, b: string): number {
  const x = a.split('/');
  const y = b.split('/');
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const p = x[i]!;
    const q = y[i]!;
    if (p !== q) return p < q ? -1 : 1;
  }
  return x.length - y.length;
}
