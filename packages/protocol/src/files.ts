import { z } from 'zod';
import { FileMetadataQuery } from './file-metadata.js';

const SandboxPath = z
  .string()
  .min(1)
  .max(4096)
  .refine((s) => !s.includes('\0'), 'must not contain NUL bytes');

export const FileEntry = z.object({
  name: z.string(),
  path: z.string(),
  type: z.enum(['file', 'dir', 'symlink', 'other']),
  size: z.number(),
  mode: z.number(),
  mtime: z.string(),
  uid: z.number(),
  gid: z.number(),
  linkTarget: z.string().optional(),
  /** The file's `user.*` extended attributes (prefix stripped), when it has any. */
  metadata: z.record(z.string(), z.string()).optional(),
});
export type FileEntry = z.infer<typeof FileEntry>;

export const PathQuery = z.object({ path: SandboxPath });
export const ListQuery = z.object({ path: SandboxPath, depth: z.coerce.number().int().min(1).max(32).default(1) });
export const RemoveQuery = z.object({ path: SandboxPath, recursive: z.enum(['true', 'false', '1', '0']).optional() });
export const WriteQuery = z.object({
  path: SandboxPath,
  mode: z.coerce.number().int().min(0).max(0o7777).optional(),
  append: z.enum(['true', 'false', '1', '0']).optional(),
  user: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/).optional(),
  /** JSON object: the file's metadata afterwards (keys in `metadataScope` that it lacks are removed). */
  metadata: FileMetadataQuery.optional(),
  /** With `metadata`: only keys starting with this are replaced (default: all). */
  metadataScope: z.string().max(200).regex(/^[A-Za-z0-9!#$%&'*+\-.^_`|~]*$/).optional(),
});
export const MoveRequest = z.strictObject({ from: SandboxPath, to: SandboxPath });
export const MkdirRequest = z.strictObject({ path: SandboxPath, user: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/).optional() });

export const WatchEvent = z.object({ type: z.enum(['create', 'write', 'remove', 'rename', 'chmod']), name: z.string() });
export type WatchEvent = z.infer<typeof WatchEvent>;
