import type { SandboxInfo } from '@forkd/protocol';

/** A SandboxInfo for unit tests: a running `base` sandbox with default limits, created at the epoch. */
export function sandboxInfo(id: string, extra: Partial<SandboxInfo> = {}): SandboxInfo {
  return { id, template: 'base', state: 'running', limits: { memoryMb: 512, cpus: 1, pids: 1024 }, env: {}, metadata: {}, createdAt: new Date(0).toISOString(), hostname: id, ...extra };
}
