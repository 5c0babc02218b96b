import type { Limits } from '@forkd/protocol';

export interface RuntimeSpec {
  /** Host path of the sandbox's root filesystem. */
  rootfs: string;
  hostname: string;
  limits: Limits;
  /** Path inside the rootfs of the init (guest agent) binary. */
  init: string;
  env: Record<string, string>;
}

export type RuntimeStatus = 'created' | 'running' | 'paused' | 'stopped' | 'missing';

export interface RuntimeState {
  status: RuntimeStatus;
  /** Host pid of the sandbox's PID 1. */
  pid: number;
}

export interface ResourceUsage {
  memoryBytes: number;
  memoryLimitBytes: number;
  cpuNanos: number;
  pids: number;
  oomKills: number;
  /** Forks refused by the pids limit. */
  pidsLimitHits: number;
}

/**
 * Starts and stops isolated process trees. Implementations drive a real OCI
 * runtime; the manager never touches namespaces or cgroups itself.
 */
export interface Runtime {
  /** Creates and starts the sandbox; resolves once its init is running. */
  start(id: string, spec: RuntimeSpec): Promise<RuntimeState>;
  state(id: string): Promise<RuntimeState>;
  /** Changes the cgroup limits of a running sandbox. */
  update(id: string, limits: Limits): Promise<void>;
  /** Kills every process and releases namespaces and cgroups. Idempotent. */
  destroy(id: string): Promise<void>;
  usage(id: string): Promise<ResourceUsage>;
  /** Ids of every sandbox this runtime knows (recovery, orphan sweep). */
  list(): Promise<string[]>;
}
