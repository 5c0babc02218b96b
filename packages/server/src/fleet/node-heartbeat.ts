import type { NodeCapacity, NodeHeartbeatRequest } from '@forkd/protocol';
import { fromErrorBody } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { Logger } from '../shared/logger.js';

export interface HeartbeatOptions {
  /** The control plane's API, e.g. `https://forkd.example:8080`. */
  controlPlane: string;
  joinToken: string;
  /** What the node calls itself, how the control plane reaches it, and its token for that. */
  id: string;
  url: string;
  token: string;
  everyMs: number;
  logger: Logger;
}

/** What a node reports of itself: memory admission's room, pool space, counts and templates. */
export async function nodeCapacity(node: NodeService): Promise<NodeCapacity> {
  const [s, templates] = await Promise.all([node.stats(), node.templates()]);
  const cap = s.memoryCapBytes ?? 0;
  return {
    memoryBytes: cap,
    memoryFreeBytes: Math.max(0, cap - (s.memoryCommittedBytes ?? 0)),
    cpus: s.cpus ?? 0,
    poolFreeBytes: Math.max(0, s.poolSizeBytes - s.poolUsedBytes),
    running: s.running ?? 0,
    paused: s.paused ?? 0,
    templates: templates.map((t) => t.name),
  };
}

/** One heartbeat; throws the control plane's error (a wrong join token is UNAUTHENTICATED). */
export async function sendHeartbeat(o: Omit<HeartbeatOptions, 'everyMs' | 'logger'>, capacity: NodeCapacity): Promise<void> {
  const body: NodeHeartbeatRequest = { id: o.id, url: o.url, token: o.token, capacity };
  const res = await fetch(new URL('/v1/fleet/heartbeat', o.controlPlane), {
    method: 'POST',
    headers: { authorization: `Bearer ${o.joinToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  if (!res.ok) throw fromErrorBody(await res.json().catch(() => null), res.status);
}

/**
 * A node's membership: a heartbeat now and every `everyMs` (each one says
 * what it can take, so placement follows). A control plane that does not
 * answer is logged, not fatal: the node keeps serving what it has.
 */
export function startHeartbeats(node: NodeService, o: HeartbeatOptions): { stop(): void; beat(): Promise<void> } {
  let failing = false;
  const beat = async () => {
    try {
      await sendHeartbeat(o, await nodeCapacity(node));
      if (failing) o.logger.info('control plane reached again', { controlPlane: o.controlPlane });
      failing = false;
    } catch (err) {
      if (!failing) o.logger.warn('heartbeat to the control plane failed', { controlPlane: o.controlPlane, error: String(err) });
      failing = true;
    }
  };
  const first = beat();
  const timer = setInterval(() => void beat(), o.everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer), beat: () => first.then(beat) };
}
