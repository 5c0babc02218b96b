import type { Limits } from '@forkd/protocol';

export interface RuntimeSpec {
  /** Host path of the sandbox's root filesystem. */
  rootfs: string;
  hostname: string;
  limits: Limits;
  /** Path inside the rootfs of the init (guest agent) binary. */
  init: string;
  env: Record<string, string>;
  /**
   * The sandbox's user namespace: its uid and gid 0..size-1 are hostId..
   * on the host, and its root filesystem is seen through an idmapped mount
   * (the files keep their ids on disk). Absent: no user namespace (sandboxes
   * made before forkd used them). A restore takes the range its images were
   * dumped with, whatever this says: CRIU recreates the namespace as it was.
   */
  idmap?: IdMap | undefined;
}

export interface IdMap {
  hostId: number;
  size: number;
}

export type RuntimeStatus = 'created' | 'running' | 'paused' | 'stopped' | 'missing';

export interface RuntimeState {
  status: RuntimeStatus;
  /** Host pid of the sandbox's PID 1. */
  pid: number;
  /** The user namespace range it runs with (a restore's is its images'); from start and restore only. */
  idmap?: IdMap | undefined;
}

export interface CheckpointOptions {
  imagesDir: string;
  /** Where CRIU writes its log; kept for diagnostics. */
  workDir: string;
  leaveRunning: boolean;
  /** argv of a command run while the tree is frozen (the filesystem snapshot). */
  whileFrozen?: string[];
}

export interface CheckpointStats {
  /** Time the sandbox's processes were frozen. */
  frozenMs: number;
  dumpMs: number;
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
  /** Thaws a sandbox left frozen (by a checkpoint without leaveRunning, or a crash in one). */
  thaw(id: string): Promise<void>;
  /**
   * Dumps the process tree's memory and state into `imagesDir` (CRIU).
   * Consistency: `whileFrozen` runs while the tree is frozen (alongside the
   * dump), so memory and files are from the same instant. With leaveRunning
   * it is thawed after; otherwise it stays frozen, for the caller to record
   * the snapshot before it destroys the processes (a crash in between loses
   * nothing).
   */
  checkpoint(id: string, opts: CheckpointOptions): Promise<CheckpointStats>;
  /** Starts a sandbox from a checkpoint, with `spec` (its own root, cgroup, limits). */
  restore(id: string, spec: RuntimeSpec, opts: { imagesDir: string }): Promise<RuntimeState>;
  /** Kills every process and releases namespaces and cgroups. Idempotent. */
  destroy(id: string): Promise<void>;
  usage(id: string): Promise<ResourceUsage>;
  /** Ids of every sandbox this runtime knows (recovery, orphan sweep). */
  list(): Promise<string[]>;
}
