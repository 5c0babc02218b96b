import { z } from 'zod';
import { MAX_FORK_COUNT, SNAPSHOT_ID_PATTERN, SNAPSHOT_NAME_PATTERN } from './ids.js';
import { EnvMap, MetadataMap } from './sandbox.js';

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
  name: z.string().regex(SNAPSHOT_NAME_PATTERN, 'invalid snapshot name').optional(),
});

export const PinRequest = z.strictObject({ pinned: z.boolean() });

/**
 * A fork. `metadata`, when given, is the forks' metadata (instead of the
 * parent's); `env` is laid over the parent's env (its keys added or
 * replaced). A fork restores the parent's processes as they were, with the
 * env they started with: the fork's env applies to every process started in
 * it afterwards (each exec gets the sandbox's env, then its own).
 */
export const ForkRequest = z.strictObject({
  count: z.number().int().min(1).max(MAX_FORK_COUNT).default(1),
  metadata: MetadataMap.optional(),
  env: EnvMap.optional(),
});
export type ForkRequest = z.input<typeof ForkRequest>;

export const RewindRequest = z.strictObject({
  snapshot: z.string().regex(SNAPSHOT_ID_PATTERN, 'invalid snapshot id'),
});

/**
 * A snapshot import (the node contract's, control plane to node): the blob
 * key of an exported snapshot's manifest; `asSandbox` records its sandbox
 * too, paused on it, under the same id.
 */
export const ImportSnapshotRequest = z.strictObject({
  manifest: z.string().min(1).max(512),
  asSandbox: z.boolean().optional(),
});
export type ImportSnapshotRequest = z.input<typeof ImportSnapshotRequest>;

/** A template import (the node contract's, control plane to node): the blob key of an exported template's manifest. */
export const ImportTemplateRequest = z.strictObject({
  manifest: z.string().min(1).max(512),
});
export type ImportTemplateRequest = z.input<typeof ImportTemplateRequest>;
