import { label } from '../shared/histogram.js';
import type { NodeRecord } from './fleet-store.js';

/**
 * Per-node gauges for `/metrics` (Prometheus text): whether each node is
 * live, its room and sandboxes as of its last heartbeat, and how long ago
 * that was. `placed` counts the sandboxes the fleet store places on it.
 */
export function renderFleetMetrics(nodes: readonly NodeRecord[], placed: ReadonlyMap<string, number>, now: number, deadlineMs: number): string {
  const out: string[] = [];
  const series = (name: string, help: string, value: (n: NodeRecord) => number) => {
    out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`);
    for (const n of nodes) out.push(`${name}{node="${label(n.id)}",state="${n.state}"} ${value(n)}`);
  };
  series('forkd_node_up', 'Whether the node is active and heard from within the deadline (FORKD_NODE_DEADLINE_S).', (n) => (n.state === 'active' && now - Date.parse(n.lastSeenAt) <= deadlineMs ? 1 : 0));
  series('forkd_node_heartbeat_age_seconds', 'Seconds since the node\'s last heartbeat.', (n) => Math.max(0, (now - Date.parse(n.lastSeenAt)) / 1000));
  series('forkd_node_memory_free_bytes', 'Memory its admission would still grant, as of its last heartbeat.', (n) => n.capacity.memoryFreeBytes);
  series('forkd_node_pool_free_bytes', 'Free bytes in its pool, as of its last heartbeat.', (n) => n.capacity.poolFreeBytes);
  series('forkd_node_running_sandboxes', 'Running sandboxes it reported.', (n) => n.capacity.running);
  series('forkd_node_placed_sandboxes', 'Sandboxes the fleet places on it.', (n) => placed.get(n.id) ?? 0);
  return out.join('\n') + '\n';
}
