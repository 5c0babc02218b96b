import { z } from 'zod';
import { MAX_FORK_COUNT, SNAPSHOT_ID_PATTERN } from './ids.js';

export const SnapshotInfo = z.object({
  id: z.string(),
  sandboxId: z.string(),
  name: z.string().optional(),
  createdAt: z.string(),
  /** How long the sandbox's processes were frozen for it. */
  frozenMs: z.number(),
  /** Bytes of its memory images. */
  sizeBytes: z.number(),
  /** The snapshot taken before it in the same sandbox's history (or the one its sandbox was forked from). */
  parentId: z.string().optional(),
  pinned: z.boolean(),
  reason: z.enum(['manual', 'pause', 'rewind', 'fork', 'policy']),
});
export type SnapshotInfo = z.infer<typeof SnapshotInfo>;

export const CreateSnapshotRequest = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'invalid snapshot name').optional(),
});

export const PinRequest = z.strictObject({ pinned: z.boolean() });

export const ForkRequest = z.strictObject({
  count: z.number().int().min(1).max(MAX_FORK_COUNT).default(1),
});

export const RewindRequest = z.strictObject({
  snapshot: z.string().regex(SNAPSHOT_ID_PATTERN, 'invalid snapshot id'),
});
