import { ForkdError, type Limits } from '@forkd/protocol';
import type { HostCapacity } from './host-capacity.js';

/** The largest sandbox this server makes. */
export interface SandboxMaxima {
  memoryMb: number;
  cpus: number;
  pids: number;
}

/** The protocol's own ceiling for pids; the nproc rlimit (rlimits.ts) matches it. */
export const MAX_PIDS = 65_536;

/**
 * Unset maxima follow the host: no sandbox larger than the machine (a
 * memory limit above MemTotal is no limit; a cpu quota above the CPU count
 * cannot be used).
 */
export function sandboxMaxima(host: HostCapacity, configured: { memoryMb?: number | undefined; cpus?: number | undefined; pids?: number | undefined } = {}): SandboxMaxima {
  return { memoryMb: configured.memoryMb ?? host.memoryMb, cpus: configured.cpus ?? host.cpus, pids: Math.min(configured.pids ?? MAX_PIDS, MAX_PIDS) };
}

const NAMES = { memoryMb: ['FORKD_MAX_MEMORY_MB', 'MB'], cpus: ['FORKD_MAX_CPUS', 'CPUs'], pids: ['FORKD_MAX_PIDS', 'pids'] } as const;

/**
 * A request above a maximum is the request's fault, whatever else runs:
 * INVALID_ARGUMENT (400), as E2B and Daytona answer a size their plan or
 * server does not offer, with the maximum named so the caller can ask again.
 */
export function checkMaxima(limits: Pick<Limits, 'memoryMb' | 'cpus' | 'pids'>, max: SandboxMaxima): void {
  for (const k of ['memoryMb', 'cpus', 'pids'] as const) {
    if (limits[k] > max[k]) {
      const [env, unit] = NAMES[k];
      throw new ForkdError('INVALID_ARGUMENT', `${k} ${limits[k]} is above this server's maximum of ${max[k]} ${unit} per sandbox (${env})`, { limit: env, max: max[k], requested: limits[k] });
    }
  }
}

/** A request of the server's own (a template build) shrunk to fit: it must not fail on a small host. */
export function clampToMaxima<T extends { memoryMb: number; cpus: number }>(want: T, max: SandboxMaxima): T {
  return { ...want, memoryMb: Math.min(want.memoryMb, max.memoryMb), cpus: Math.min(want.cpus, max.cpus) };
}
