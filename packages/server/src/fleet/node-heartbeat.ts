import type { NodeCapacity, NodeHeartbeatRequest } from '@forkd/protocol';
import { fromErrorBody } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { Logger } from '../shared/logger.js';

export interface HeartbeatOptions {
  /** The control plane's API, e.g. `https://forkd.example:8080`: each replica's, tried in turn until one answers. */
  controlPlanes: string[];
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
  const cap = Math.floor(s.memoryCapBytes ?? 0);
  return {
    memoryBytes: cap,
    memoryFreeBytes: Math.max(0, cap - Math.ceil(s.memoryCommittedBytes ?? 0)),
    cpus: s.cpus ?? 0,
    poolFreeBytes: Math.max(0, s.poolSizeBytes - s.poolUsedBytes),
    running: s.running ?? 0,
    paused: s.paused ?? 0,
    templates: templates.map((t) => t.name),
  };
}

/** One heartbeat to one control plane; throws its error (a wrong join token is UNAUTHENTICATED). */
export async function sendHeartbeat(controlPlane: string, o: Pick<HeartbeatOptions, 'id' | 'url' | 'token' | 'joinToken'>, capacity: NodeCapacity): Promise<void> {
  const body: NodeHeartbeatRequest = { id: o.id, url: o.url, token: o.token, capacity };
  const res = await fetch(new URL('/v1/fleet/heartbeat', controlPlane), {
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
  // The replica that answered last goes first: one that is down costs a timeout only until another answers.
  let first = 0;
  const beat = async () => {
    const capacity = await nodeCapacity(node).catch(() => undefined);
    if (!capacity) return;
    let last: unknown;
    for (let i = 0; i < o.controlPlanes.length; i++) {
      const k = (first + i) % o.controlPlanes.length;
      try {
        await sendHeartbeat(o.controlPlanes[k]!, o, capacity);
        first = k;
        if (failing) o.logger.info('control plane reached again', { controlPlane: o.controlPlanes[k] });
        failing = false;
        return;
      } catch (err) {
        last = err;
      }
    }
    if (!failing) o.logger.warn('heartbeat to the control plane failed', { controlPlanes: o.controlPlanes, error: String(last) });
    failing = true;
  };
  const initial = beat();
  const timer = setInterval(() => void beat(), o.everyMs);
  timer.unref();
  return { stop: () => clearInterval(timer), beat: () => initial.then(beat) };
}
