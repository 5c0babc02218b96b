import type { SandboxMetrics } from '@forkd/protocol';

/** One reading of a sandbox's usage, as the charts show it. */
export interface UsageSample {
  /** Percent of its CPU limit used since the previous reading (undefined for the first). */
  cpuPercent: number | undefined;
  memoryBytes: number;
  memoryLimitBytes: number;
  diskBytes: number;
  /** The quota when there is one, else undefined. */
  diskLimitBytes: number | undefined;
}

/**
 * A reading from two metrics answers `ms` apart: CPU is the cgroup's CPU time
 * spent over the wall time between them, as a share of the sandbox's CPUs.
 */
export function usageSample(now: SandboxMetrics, before: { metrics: SandboxMetrics; at: number } | undefined, at: number, cpus: number): UsageSample {
  let cpuPercent: number | undefined;
  if (before && at > before.at && now.cpuNanos >= before.metrics.cpuNanos) {
    cpuPercent = ((now.cpuNanos - before.metrics.cpuNanos) / 1e6 / (at - before.at) / Math.max(cpus, 0.01)) * 100;
  }
  const quota = now.diskQuotaBytes !== undefined && now.diskQuotaUsedBytes !== undefined;
  return {
    cpuPercent,
    memoryBytes: now.memoryBytes,
    memoryLimitBytes: now.memoryLimitBytes,
    diskBytes: quota ? now.diskQuotaUsedBytes! : now.diskBytes,
    diskLimitBytes: quota ? now.diskQuotaBytes : undefined,
  };
}
