import { z } from 'zod';
import { SandboxInfo } from './sandbox.js';

/** A node's id: what `forkd nodes` shows and a placement names (hostname-like). */
export const NODE_ID_PATTERN = /^[a-z0-9](?:[a-z0-9.-]{0,61}[a-z0-9])?$/;
export const NodeId = z.string().regex(NODE_ID_PATTERN, 'node id: lowercase letters, digits, . and -, at most 63');

const Bytes = z.number().int().min(0).max(2 ** 53 - 1);

/** What a node has for more sandboxes, as of its last heartbeat. */
export const NodeCapacity = z.strictObject({
  memoryBytes: Bytes,
  /** Memory admission would still grant (its cap less what running sandboxes' limits hold). */
  memoryFreeBytes: Bytes,
  cpus: z.number().min(0).max(100_000),
  poolFreeBytes: Bytes,
  running: z.number().int().min(0).max(10_000_000),
  paused: z.number().int().min(0).max(10_000_000),
  templates: z.array(z.string().max(64)).max(10_000),
});
export type NodeCapacity = z.infer<typeof NodeCapacity>;

export const NODE_STATES = ['active', 'draining', 'lost'] as const;
export type NodeState = (typeof NODE_STATES)[number];

/**
 * `POST /v1/fleet/heartbeat` (authorization: the fleet's join token): a node
 * registers, then repeats it every few seconds. `token` is the node's own,
 * for the control plane's calls to `url`; it is stored sealed.
 */
export const NodeHeartbeatRequest = z.strictObject({
  id: NodeId,
  url: z.string().url().max(2048).refine((u) => /^https?:\/\//.test(u), 'url: http:// or https://'),
  token: z.string().min(16).max(512),
  capacity: NodeCapacity,
});
export type NodeHeartbeatRequest = z.infer<typeof NodeHeartbeatRequest>;

/** A node as `GET /v1/nodes` shows it (admin keys only; never its token). */
export const NodeInfo = z.object({
  id: z.string(),
  url: z.string(),
  state: z.enum(NODE_STATES),
  capacity: NodeCapacity,
  registeredAt: z.string(),
  lastSeenAt: z.string(),
  /** Sandboxes placed on it. */
  sandboxes: z.number(),
});
export type NodeInfo = z.infer<typeof NodeInfo>;

/** `POST /v1/sandboxes/{id}/migrate` (admin keys): to `node`, or where placement says. */
export const MigrateSandboxRequest = z.strictObject({ node: NodeId.optional() });
export type MigrateSandboxRequest = z.infer<typeof MigrateSandboxRequest>;

/** A finished move: same id, now on `to`. */
export const MigrationInfo = z.object({
  sandbox: SandboxInfo,
  from: z.string(),
  to: z.string(),
  /** What the export added to the blob store (chunks it held already are not counted). */
  bytesUploaded: z.number(),
  ms: z.number(),
});
export type MigrationInfo = z.infer<typeof MigrationInfo>;

/** `POST /v1/nodes/{node}/drain`: the node, and what moved off it (or did not, with the error's code and message). */
export const DrainResult = z.object({
  node: NodeInfo,
  moved: z.array(MigrationInfo),
  failed: z.array(z.object({ sandbox: z.string(), code: z.string(), message: z.string() })),
});
export type DrainResult = z.infer<typeof DrainResult>;
