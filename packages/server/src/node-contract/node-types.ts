import type { Duplex } from 'node:stream';
import type { ExecContext, SandboxInfo } from '@forkd/protocol';

/** A call held for an approver (the policy gate's): what its stream's `waiting` event says. */
export interface WaitingCall {
  approvalId: string;
  rule: string;
  expiresAt: string;
  context?: ExecContext | undefined;
}

/**
 * The types of the node contract (node-service.ts). They depend on nothing
 * of a node's implementation: a remote node's client speaks them as well as
 * the in-process manager does.
 */

export interface SpawnOptions {
  argv: string[];
  env?: Record<string, string> | undefined;
  cwd?: string | undefined;
  user?: string | undefined;
  tag?: string | undefined;
  pty?: { cols: number; rows: number } | undefined;
  stdin?: boolean | undefined;
}

export type ProcessSelector = { pid: number } | { tag: string };

/** Output callbacks; a returned promise holds back further reads (back-pressure to the guest). */
export interface OutputHandlers {
  onStdout?: (data: Buffer) => void | Promise<void>;
  onStderr?: (data: Buffer) => void | Promise<void>;
  onDropped?: (bytes: number) => void | Promise<void>;
  /** The sandbox went back to an earlier state under a stream that goes on. */
  onRewound?: () => void | Promise<void>;
  /**
   * The stream's ring offset moved other than by its output (a re-attach
   * found output dropped, or the state rewound to is behind): called before
   * any output that follows it (see ResumePoint).
   */
  onPosition?: (offset: number) => void | Promise<void>;
  /** The call waits for an approver (the control plane's policy gate; nodes never call it). */
  onWaiting?: (w: WaitingCall) => void | Promise<void>;
  /** Aborts when the reader went away: a call still waiting for approval is then dropped (the control plane's policy gate). */
  abort?: AbortSignal;
  /** A policy limit ended the process (the control plane's policy gate; nodes never call it). */
  onLimit?: (l: { limit: 'maxOutputBytes' | 'maxDurationSeconds'; rule: string }) => void | Promise<void>;
}

export interface ProcessExit {
  exitCode: number;
  signal: number;
}

/** An exit with OOM attribution: the kernel says only SIGKILL, the sandbox's cgroup says whether the OOM killer did it. */
export interface ExecExit extends ProcessExit {
  oomKilled: boolean;
}

/**
 * Where a process stream starts, for its client to resume it after a
 * daemon restart: the spawn's token and the ring offset (the protocol's
 * ResumePoint; output moves it by 5 + its length, `onPosition` sets it).
 */
export interface ResumePoint {
  token: number;
  offset: number;
}

/** A process as a client-facing stream sees it: the same whether or not the connection under it was replaced. */
export interface ProcessHandle {
  readonly pid: number;
  readonly tag: string | undefined;
  readonly pty: boolean;
  /** Where this stream started; absent for an agent too old to resume streams (protocol 1). */
  readonly resume?: ResumePoint | undefined;
  write(data: Buffer): Promise<void>;
  closeStdin(): void;
  signal(signal: number): void;
  resize(cols: number, rows: number): void;
  /**
   * Lets go of the process; it keeps running in the sandbox. `hold`: the
   * daemon is stopping and the client will resume the stream, so the guest
   * holds the process's output meanwhile (back-pressure, up to 30 s) rather
   * than dropping what its ring cannot keep.
   */
  detach(opts?: { hold?: boolean }): void;
}

/** A started or attached process; `exit` is null when the stream was let go (detach), and rejects with REWOUND when a rewind took the process away. */
export interface ProcessStream {
  process: ProcessHandle;
  exit: Promise<ExecExit | null>;
}

export interface WatchHandle {
  close(): void;
  /** Resolves when the watch ends for good (closed, or the sandbox went away). */
  done: Promise<void>;
}

export interface PortConnection {
  stream: Duplex;
  /** Settles when the connection is over; `refused` when nothing listened. */
  done: Promise<{ refused: boolean; error?: string | undefined }>;
  close(): void;
}

export interface FileContent {
  size: number;
  chunks: AsyncIterable<Buffer>;
}

export interface WriteFileOptions {
  mode?: number | undefined;
  append?: boolean | undefined;
  user?: string | undefined;
  /**
   * The file's metadata afterwards (stored as `user.<key>` xattrs, see
   * FileMetadata): keys in `metadataScope` that it lacks are removed.
   * Unset: the file's metadata is left as it is.
   */
  metadata?: Record<string, string> | undefined;
  /** Only keys starting with this are replaced (default '': all); E2B's are under `e2b.`. */
  metadataScope?: string | undefined;
}

/** Pause: `memory: false` keeps only the files (see PauseRequest in @forkd/protocol). Default true. */
export interface PauseOptions {
  memory?: boolean | undefined;
}

/** Resume: `memory: false` starts it cold from its files even after a pause that kept memory. Default true. */
export interface ResumeOptions {
  memory?: boolean | undefined;
}

/**
 * What the forks get instead of the parent's: `metadata` replaces the
 * parent's, `env` is laid over it (see ForkRequest in @forkd/protocol; it
 * applies to processes started after the fork, the restored ones keep theirs).
 */
export interface ForkOptions {
  metadata?: Record<string, string> | undefined;
  env?: Record<string, string> | undefined;
}

/** A snapshot in the node's blob store (NodeService.exportSnapshot). */
export interface SnapshotExport {
  /** Blob key of its manifest: what an import on any node of the store takes. */
  manifest: string;
  /** Bytes this export uploaded (chunks the store held already are not counted). */
  bytesUploaded: number;
}

/** A whole template in the node's blob store (NodeService.exportTemplate). */
export interface TemplateExport {
  /** Blob key of its manifest: what an import on any node of the store takes. */
  manifest: string;
  /** Bytes this export uploaded (what the store held already is not counted). */
  bytesUploaded: number;
}

/**
 * An import. `asSandbox`: its sandbox is recorded too, under the same id,
 * paused with this snapshot as the state a resume restores (a migration);
 * otherwise only the snapshot is (a snapshot of a sandbox that lives
 * elsewhere, for a fork).
 */
export interface ImportSnapshotOptions {
  asSandbox?: boolean | undefined;
}

export interface ForkTree {
  sandbox: SandboxInfo;
  children: ForkTree[];
}

/** Node-wide numbers for the metrics endpoint (admin only). */
export interface NodeStats {
  snapshots: number;
  snapshotBytes: number;
  poolUsedBytes: number;
  poolSizeBytes: number;
  warmPoolHeld: number;
  /** Paused sandboxes whose frozen processes are kept for the hot window (see hot-pauses.ts). */
  hotPaused?: number;
  /** Memory admission: what running sandboxes' limits may add up to, and what they (and operations in flight) hold. */
  memoryCapBytes?: number;
  memoryCommittedBytes?: number;
  cpus?: number;
  running?: number;
  paused?: number;
  /** Connections ended by the handler guard, per component, in the node's process (shared/connection-guard.ts). */
  handlerFaults?: Record<string, number>;
}

/**
 * Called with a new sandbox's id before the node records it anywhere (create,
 * each fork, a template's build sandbox): the control plane writes its owner
 * first, so no sandbox is ever listed or reachable without one. A throw
 * (or rejection) aborts the creation.
 */
export type ClaimSandbox = (id: string) => void | Promise<void>;
