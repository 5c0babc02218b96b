import type { Limits, NetworkRules } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import type { FrozenCommit } from '../storage/frozen-commit.js';
import type { GuestTransport, GuestTransportDeps } from './guest-transport.js';
import type { RootKind, SandboxRoot } from './sandbox-root.js';

export interface RuntimeSpec {
  /** The sandbox's root filesystem, of the runtime's kind (Runtime.rootKind). Its init is the guest agent its guest transport installed. */
  root: SandboxRoot;
  hostname: string;
  limits: Limits;
  env: Record<string, string>;
  /**
   * The sandbox's user namespace: its uid and gid 0..size-1 are hostId..
   * on the host, and its root filesystem is seen through an idmapped mount
   * (the files keep their ids on disk). Absent: no user namespace (sandboxes
   * made before forkd used them). A restore takes the range its images were
   * dumped with, whatever this says: CRIU recreates the namespace as it was.
   */
  idmap?: IdMap | undefined;
  /** Its network mode and rules (see Network); absent: `none`, loopback only. */
  network?: NetworkRules | undefined;
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
  /** Why it stopped, when the runtime itself ended it (a lazy restore whose memory could not all come in). */
  cause?: string | undefined;
}

export interface RestoreOptions {
  imagesDir: string;
  /**
   * The root's files are being made ready meanwhile (a copy of the
   * snapshot's, its quota, the agent's mount points): the runtime prepares
   * everything else and waits for this only before it starts the tree. If
   * it rejects, the restore does, with its error, leaving nothing running.
   */
  rootReady?: Promise<void> | undefined;
}

/** A watch of an instance's end (Runtime.watchExit). */
export interface ExitWatch {
  stop(): void;
  /**
   * Whether every end is announced. False where the host cannot tell (cgroup
   * v1): only the ends the runtime causes itself are, and the caller also
   * looks for itself.
   */
  everyExit: boolean;
}

export interface CheckpointOptions {
  imagesDir: string;
  /** Where the runtime writes its logs (CRIU's); kept for diagnostics. */
  workDir: string;
  leaveRunning: boolean;
  /** The filesystem snapshot to make while the tree is frozen (from Storage.frozenCommit). */
  whileFrozen?: FrozenCommit;
  /** The guest protocol the sandbox's agent speaks (recorded with the images; see snapshot-stamp.ts). */
  guestProtocol?: number;
}

export interface CheckpointStats {
  /** Time the sandbox's processes were frozen. */
  frozenMs: number;
  dumpMs: number;
}

/**
 * What only the runtime knows of a checkpoint's images directory (for runc,
 * CRIU's files and forkd's own beside them): the code that stores, checks
 * and publishes images asks it instead of reading their layout.
 */
export interface CheckpointImages {
  /** Whether `dir` holds a whole checkpoint (one a restore can read). */
  complete(dir: string): Promise<boolean>;
  /** Whether the file `name` of an images directory holds memory pages (stored sharing pages with the previous checkpoint's file of that name). */
  isPages(name: string): boolean;
  /** The user namespace range the checkpoint in `dir` was dumped with (a restore recreates it; undefined: none). */
  idmap(dir: string): Promise<IdMap | undefined>;
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
 * runtime (or, later, a microVM monitor); the manager never touches
 * namespaces or cgroups itself, and learns from the runtime what a root is
 * and how its guest is reached.
 */
export interface Runtime {
  /** The kind of root it takes (RuntimeSpec.root): Storage is asked for roots of this kind. */
  readonly rootKind: RootKind;
  /** The layout of its checkpoints' images (CheckpointOptions.imagesDir). */
  readonly images: CheckpointImages;
  /**
   * Readies the host for this runtime, once at the node's start (runc: CRIU's
   * kernel probe, cached; the conntrack hash CRIU walks in every freeze).
   * What it could not do only costs speed: `log` is told.
   */
  prepareHost(log: Pick<Logger, 'info' | 'warn'>): Promise<void>;
  /** How the host reaches the guest agent of this runtime's sandboxes (a Unix socket in the root for containers). */
  guests(deps: GuestTransportDeps): GuestTransport;
  /** Creates and starts the sandbox; resolves once its init is running. */
  start(id: string, spec: RuntimeSpec): Promise<RuntimeState>;
  state(id: string): Promise<RuntimeState>;
  /** Changes the cgroup limits of a running sandbox. */
  update(id: string, limits: Limits): Promise<void>;
  /** Thaws a sandbox left frozen (by freeze, a checkpoint without leaveRunning, or a crash in one). */
  thaw(id: string): Promise<void>;
  /**
   * Freezes the tree now for a checkpoint to come (which finds it frozen and
   * leaves it so): the instant a snapshot whose dump is deferred keeps (a
   * rewind's state left). Frozen as a checkpoint freezes (tasks stopped by
   * job control, a vfork caught in the freeze: see runcCheckpoint), so that
   * dump cannot hang on it. NOT_FOUND when there is no such instance.
   */
  freeze(id: string): Promise<void>;
  /**
   * Dumps the process tree's memory and state into `imagesDir` (CRIU for containers).
   * Consistency: `whileFrozen` runs while the tree is frozen (alongside the
   * dump), so memory and files are from the same instant. With leaveRunning
   * it is thawed after; otherwise it stays frozen, for the caller to record
   * the snapshot before it destroys the processes (a crash in between loses
   * nothing).
   */
  checkpoint(id: string, opts: CheckpointOptions): Promise<CheckpointStats>;
  /**
   * Resolves once the tree's whole memory is in its processes, as a dump
   * needs (a lazy restore's pages still out would be lost: see
   * LazyPagesWaits); TIMEOUT when that takes too long. checkpoint waits for
   * it too: a caller calls it first to wait before it holds anything back.
   */
  settleMemory(id: string): Promise<void>;
  /** Starts a sandbox from a checkpoint, with `spec` (its own root, cgroup, limits). */
  restore(id: string, spec: RuntimeSpec, opts: RestoreOptions): Promise<RuntimeState>;
  /** Kills every process and releases namespaces and cgroups. Idempotent. */
  destroy(id: string): Promise<void>;
  usage(id: string): Promise<ResourceUsage>;
  /**
   * Calls `onExit` once when every process of the sandbox is gone (its init
   * died: the OOM killer, a kill from outside, the runtime's own kill of a
   * tree whose memory was lost), announced rather than found by polling
   * each sandbox (see ExitWatch.everyExit). May also fire for a sandbox
   * being destroyed: the caller confirms.
   */
  watchExit(id: string, onExit: () => void): ExitWatch;
  /** Ids of every sandbox this runtime knows (recovery, orphan sweep). */
  list(): Promise<string[]>;
}
