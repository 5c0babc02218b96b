import type { SandboxInfo } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';

/** The CPU time seen at the previous sample of each sandbox: CPU use is the difference over the wall time between two. */
const lastCpu = new Map<string, { at: number; cpuNanos: number }>();

/**
 * E2B's `SandboxMetric[]` from forkd's live metrics: one sample, taken now
 * (forkd keeps no history of them); none when the asked range excludes now.
 */
export async function metricSample(view: NodeService, s: SandboxInfo, start: string | null, end: string | null): Promise<unknown[]> {
  const now = Date.now();
  const nowS = Math.floor(now / 1000);
  if (start !== null && Number(start) > nowS + 1) return [];
  if (end !== null && Number(end) < nowS - 1) return [];
  if (s.state !== 'running') return [];
  const m = await view.metrics(s.id);
  const prev = lastCpu.get(s.id);
  const created = Date.parse(s.createdAt);
  const from = prev ?? { at: created, cpuNanos: 0 };
  // Bounded: entries of sandboxes long gone go with the next overflow.
  if (lastCpu.size >= 10_000 && !lastCpu.has(s.id)) lastCpu.clear();
  lastCpu.set(s.id, { at: now, cpuNanos: m.cpuNanos });
  const cpus = Math.max(1, Math.round(s.limits.cpus));
  const wallNs = Math.max(1, (now - from.at) * 1e6);
  const pct = Math.min(100, Math.max(0, ((m.cpuNanos - from.cpuNanos) / wallNs / cpus) * 100));
  return [
    {
      timestamp: new Date(now).toISOString(),
      timestampUnix: nowS,
      cpuCount: cpus,
      cpuUsedPct: Math.round(pct * 100) / 100,
      memUsed: m.memoryBytes,
      memTotal: m.memoryLimitBytes,
      memCache: 0,
      diskUsed: m.diskQuotaUsedBytes ?? m.diskWrittenBytes,
      diskTotal: m.diskQuotaBytes ?? (s.limits.diskMb ?? 0) * 2 ** 20,
    },
  ];
}
