import { SANDBOX_STATES, type SandboxInfo } from '@forkd/protocol';
import { handlerFaults } from '../../shared/connection-guard.js';
import type { NodeStats } from '../../node-contract/index.js';

/** Upper bounds (seconds) of the API latency histogram: from an exec round trip to a template build. */
const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];

interface Histogram {
  counts: number[];
  sum: number;
  count: number;
}

/** A Prometheus label value, escaped. */
export function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** Prometheus text exposition of the API's latency per operation and the node's state, at scrape time. */
export class Metrics {
  readonly #hist = new Map<string, Histogram>();

  /** `operation` is a route pattern, so the label set stays bounded. */
  observe(operation: string, code: string, ms: number): void {
    const key = `${operation}\u0000${code}`;
    let h = this.#hist.get(key);
    if (!h) {
      h = { counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
      this.#hist.set(key, h);
    }
    const s = ms / 1000;
    BUCKETS.forEach((b, i) => {
      if (s <= b) h.counts[i]!++;
    });
    h.sum += s;
    h.count++;
  }

  render(sandboxes: readonly SandboxInfo[], stats: NodeStats): string {
    const out: string[] = [];
    out.push('# HELP forkd_sandboxes Sandboxes by state.', '# TYPE forkd_sandboxes gauge');
    for (const state of SANDBOX_STATES) out.push(`forkd_sandboxes{state="${state}"} ${sandboxes.filter((s) => s.state === state).length}`);
    const gauge = (name: string, help: string, v: number) => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} gauge`, `${name} ${v}`);
    gauge('forkd_snapshots', 'Snapshots kept on the node.', stats.snapshots);
    gauge('forkd_snapshot_bytes', 'Bytes of memory images written for the snapshots kept (before sharing between them).', stats.snapshotBytes);
    gauge('forkd_pool_used_bytes', 'Bytes allocated in the Btrfs pool.', stats.poolUsedBytes);
    gauge('forkd_pool_size_bytes', 'Size of the Btrfs pool.', stats.poolSizeBytes);
    gauge('forkd_warm_pool_sandboxes', 'Sandboxes started ahead of demand and not yet handed out.', stats.warmPoolHeld);
    gauge('forkd_hot_paused_sandboxes', 'Paused sandboxes whose frozen processes are kept for the hot window (their memory counted as running).', stats.hotPaused ?? 0);
    // In one process both maps are the same counts; over HTTP the node's components come from its own process.
    const faults = { ...handlerFaults.snapshot(), ...stats.handlerFaults };
    out.push('# HELP forkd_handler_faults_total Connections ended because a handler failed on their bytes, by component.', '# TYPE forkd_handler_faults_total counter');
    for (const [component, n] of Object.entries(faults)) out.push(`forkd_handler_faults_total{component="${label(component)}"} ${n}`);
    out.push('# HELP forkd_api_request_duration_seconds API calls by operation and result code.', '# TYPE forkd_api_request_duration_seconds histogram');
    for (const [key, h] of this.#hist) {
      const [op, code] = key.split('\u0000') as [string, string];
      const l = `operation="${label(op)}",code="${label(code)}"`;
      BUCKETS.forEach((b, i) => out.push(`forkd_api_request_duration_seconds_bucket{${l},le="${b}"} ${h.counts[i]}`));
      out.push(`forkd_api_request_duration_seconds_bucket{${l},le="+Inf"} ${h.count}`);
      out.push(`forkd_api_request_duration_seconds_sum{${l}} ${h.sum}`);
      out.push(`forkd_api_request_duration_seconds_count{${l}} ${h.count}`);
    }
    return out.join('\n') + '\n';
  }
}
