import { SANDBOX_STATES, type SandboxInfo } from '@forkd/protocol';
import { handlerFaults } from '../../shared/connection-guard.js';
import { Histogram, label } from '../../shared/histogram.js';
import type { OtlpExporterStats } from '../../shared/otlp-exporter.js';
import type { LifecycleObserver, LifecycleOperation } from '../../node-contract/instrumented-node.js';
import type { NodeStats } from '../../node-contract/index.js';

export { label } from '../../shared/histogram.js';

/** Upper bounds (seconds) of the API latency histogram: from an exec round trip to a template build. */
const API_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120];
/** Lifecycle operations run from a millisecond (a warm create, a hot resume) to minutes (a template build). */
export const LIFECYCLE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800];

const NO_OTLP: OtlpExporterStats = { exported: 0, dropped: 0, queued: 0 };

/** What /metrics needs beyond the node's list and numbers. */
export interface ScrapeInputs {
  /** Sandbox id to tenant (the control plane's owners); an unowned sandbox is the operator's (tenant ""). */
  owners: ReadonlyMap<string, string>;
}

/**
 * Prometheus text exposition of the API's latency per operation, the
 * lifecycle operations' latency, the node's state and each tenant's share
 * of it, at scrape time. Every name is exposed (HELP and TYPE) even before
 * its first sample, so a dashboard's queries always name a known metric.
 */
export class Metrics implements LifecycleObserver {
  readonly #api = new Histogram('forkd_api_request_duration_seconds', 'API calls by operation and result code.', API_BUCKETS);
  readonly #lifecycle = new Histogram('forkd_lifecycle_duration_seconds', 'Lifecycle operations (create, snapshot, pause, resume, fork, rewind, delete, template_build) by result (ok or the error code).', LIFECYCLE_BUCKETS);

  /** The OTLP exporter's counters (absent: tracing is off, all zero). */
  constructor(private readonly otlp: () => OtlpExporterStats = () => NO_OTLP) {}

  /** `operation` is a route pattern, so the label set stays bounded. */
  observe(operation: string, code: string, ms: number): void {
    this.#api.observe({ operation, code }, ms / 1000);
  }

  lifecycle(operation: LifecycleOperation, result: string, seconds: number): void {
    this.#lifecycle.observe({ operation, result }, seconds);
  }

  render(sandboxes: readonly SandboxInfo[], stats: NodeStats, inputs: ScrapeInputs = { owners: new Map() }): string {
    const out: string[] = [];
    const head = (name: string, help: string, type: 'gauge' | 'counter') => out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
    head('forkd_sandboxes', 'Sandboxes by state.', 'gauge');
    for (const state of SANDBOX_STATES) out.push(`forkd_sandboxes{state="${state}"} ${sandboxes.filter((s) => s.state === state).length}`);
    const gauge = (name: string, help: string, v: number) => (head(name, help, 'gauge'), out.push(`${name} ${v}`));
    gauge('forkd_snapshots', 'Snapshots kept on the node.', stats.snapshots);
    gauge('forkd_snapshot_bytes', 'Bytes of memory images written for the snapshots kept (before sharing between them).', stats.snapshotBytes);
    gauge('forkd_pool_used_bytes', 'Bytes allocated in the Btrfs pool.', stats.poolUsedBytes);
    gauge('forkd_pool_size_bytes', 'Size of the Btrfs pool.', stats.poolSizeBytes);
    gauge('forkd_warm_pool_sandboxes', 'Sandboxes started ahead of demand and not yet handed out.', stats.warmPoolHeld);
    gauge('forkd_hot_paused_sandboxes', 'Paused sandboxes whose frozen processes are kept for the hot window (their memory counted as running).', stats.hotPaused ?? 0);
    gauge('forkd_memory_committed_bytes', 'Memory admission: what running sandboxes (and operations in flight) hold.', stats.memoryCommittedBytes ?? 0);
    gauge('forkd_memory_cap_bytes', 'Memory admission: what running sandboxes\' limits may add up to.', stats.memoryCapBytes ?? 0);
    gauge('forkd_cpus', 'CPUs of the node.', stats.cpus ?? 0);
    this.#tenants(out, sandboxes, inputs.owners);
    // In one process both maps are the same counts; over HTTP the node's components come from its own process.
    const faults = { ...handlerFaults.snapshot(), ...stats.handlerFaults };
    head('forkd_handler_faults_total', 'Connections ended because a handler failed on their bytes, by component.', 'counter');
    for (const [component, n] of Object.entries(faults)) out.push(`forkd_handler_faults_total{component="${label(component)}"} ${n}`);
    const o = this.otlp();
    head('forkd_otlp_spans_exported_total', 'Trace spans the OTLP collector took (FORKD_OTLP_ENDPOINT).', 'counter');
    out.push(`forkd_otlp_spans_exported_total ${o.exported}`);
    head('forkd_otlp_spans_dropped_total', 'Trace spans dropped: queue full, or the collector down or refusing.', 'counter');
    out.push(`forkd_otlp_spans_dropped_total ${o.dropped}`);
    out.push(...this.#api.render(), ...this.#lifecycle.render());
    return out.join('\n') + '\n';
  }

  /** Per tenant: one series per tenant with a running sandbox (bounded by the tenants, not the sandboxes). */
  #tenants(out: string[], sandboxes: readonly SandboxInfo[], owners: ReadonlyMap<string, string>): void {
    const running = new Map<string, { n: number; bytes: number }>();
    for (const s of sandboxes) {
      if (s.state !== 'running') continue;
      const t = owners.get(s.id) ?? '';
      const r = running.get(t) ?? { n: 0, bytes: 0 };
      r.n++;
      r.bytes += s.limits.memoryMb * 2 ** 20;
      running.set(t, r);
    }
    out.push('# HELP forkd_tenant_running_sandboxes Running sandboxes per tenant ("" for the operator\'s own).', '# TYPE forkd_tenant_running_sandboxes gauge');
    for (const [t, r] of running) out.push(`forkd_tenant_running_sandboxes{tenant="${label(t)}"} ${r.n}`);
    out.push('# HELP forkd_tenant_memory_committed_bytes Memory limits of each tenant\'s running sandboxes (what admission holds for them).', '# TYPE forkd_tenant_memory_committed_bytes gauge');
    for (const [t, r] of running) out.push(`forkd_tenant_memory_committed_bytes{tenant="${label(t)}"} ${r.bytes}`);
  }
}
