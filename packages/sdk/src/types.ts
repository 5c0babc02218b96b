import type { BuildStep, ExecContext, GrantSpecInput } from '@forkd/protocol';
import type { SandboxInfo, SandboxMetrics } from '@forkd/protocol';

/** Options shared by everything that starts a process. */
export interface SpawnOptions {
  env?: Record<string, string>;
  cwd?: string;
  /** A user inside the sandbox (default root). */
  user?: string;
  /** A name to find the process by later (`tag:<tag>` selectors). */
  tag?: string;
}

/** argv (run as is) or a string (run by `bash -lc`). */
export type Command = string | readonly string[];

/** A process: its pid, or its tag (`"tag:web"`, `{ tag: "web" }`, or a bare non-numeric string). */
export type ProcessSelector = number | string | { pid: number } | { tag: string };

export type SignalSpec = number | string;

export interface ProcessExit {
  exitCode: number;
  /** The signal that killed the process, 0 if it exited. */
  signal: number;
  oomKilled: boolean;
}

export interface StartedProcess {
  pid: number;
  tag?: string | undefined;
  pty: boolean;
}

export interface WaitingForApproval {
  approvalId: string;
  rule: string;
  expiresAt: string;
  /** What the approver is shown besides the command: the env the call sets, its cwd, user and resolved program. */
  context?: ExecContext | undefined;
}

export interface PolicyLimitHit {
  limit: 'maxOutputBytes' | 'maxDurationSeconds';
  rule: string;
}

export type OutputEncoding = 'bytes' | 'utf8';

/** What output callbacks receive for an encoding. */
export type OutputChunk<E extends OutputEncoding> = E extends 'utf8' ? string : Uint8Array;

/**
 * Output callbacks receive raw bytes, or text with `encoding: 'utf8'` (decoded
 * as a stream, so characters split across chunks arrive whole).
 */
export interface OutputCallbacks<E extends OutputEncoding = 'bytes'> {
  encoding?: E;
  onStdout?: (chunk: OutputChunk<E>) => void;
  onStderr?: (chunk: OutputChunk<E>) => void;
}

export interface ProcessHandlerOptions {
  onStarted?: (process: StartedProcess) => void;
  /** The server dropped this many bytes of output because the reader was too slow. */
  onDropped?: (bytes: number) => void;
  /**
   * The sandbox was rewound under the stream and its process exists in that
   * state: output goes on from there. (When it does not, the stream ends with
   * a REWOUND error.) Snapshots, pauses and hibernation are invisible.
   */
  onRewound?: () => void;
  /** The call waits for an approver (a policy's `requireApproval`): it runs once approved, or fails with PERMISSION_DENIED. */
  onWaiting?: (w: WaitingForApproval) => void;
  /** A policy limit ended the process: its output was cut (`maxOutputBytes`) or it ran too long (`maxDurationSeconds`). */
  onLimit?: (l: PolicyLimitHit) => void;
  /** Aborting detaches: the process keeps running. */
  abortSignal?: AbortSignal;
}

export type ExecOptions<E extends OutputEncoding = 'bytes'> = SpawnOptions &
  ProcessHandlerOptions &
  OutputCallbacks<E> & {
    /** Written to stdin, which is then closed. */
    stdin?: string | Uint8Array;
    /** Killed with SIGKILL after this long (the result then has signal 9). */
    timeoutMs?: number;
    /** Keep stdout/stderr in the result (default true); turn off for large streamed output. */
    capture?: boolean;
    /** Per-call grants: the sandbox's requests carry these secrets only while this call runs. */
    grants?: GrantSpecInput[];
  };

export interface ExecResult extends ProcessExit {
  pid: number;
  stdout: string;
  stderr: string;
}

export type BackgroundOptions = SpawnOptions & {
  /** Keep stdin open as a pipe for later `writeStdin` (otherwise /dev/null). */
  openStdin?: boolean;
};

export type AttachHandlers<E extends OutputEncoding = 'bytes'> = ProcessHandlerOptions & OutputCallbacks<E>;

export interface StreamOptions extends SpawnOptions {
  cmd: Command;
  /** The call waits for an approver (a policy's `requireApproval`) before it starts. */
  onWaiting?: (w: WaitingForApproval) => void;
  pty?: boolean;
  cols?: number;
  rows?: number;
}

export interface PtyOptions extends SpawnOptions {
  cols: number;
  rows: number;
  /** Default `bash -l`. */
  cmd?: Command;
}

/** A sandbox's resource usage (memory, CPU, processes, disk). */
export type Metrics = SandboxMetrics;

export interface WriteFileOptions {
  /** Permission bits, e.g. 0o755. */
  mode?: number;
  append?: boolean;
  /** Owner of the created file. */
  user?: string;
  /** The file's metadata afterwards (`user.<key>` xattrs; `{}` clears it); unset: left as it is. */
  metadata?: Record<string, string>;
  /** With `metadata`: only keys starting with this are replaced. */
  metadataScope?: string;
  abortSignal?: AbortSignal;
}

export type FileData = string | Uint8Array | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

export interface SnapshotOptions {
  /** A label for the timeline: letters, digits, `.`, `_`, `-`, at most 64. */
  name?: string;
}

export interface ForkOptions {
  /** How many sandboxes to make (1 to 64, default 1). */
  count?: number;
  /** The forks' metadata, instead of the parent's. */
  metadata?: Record<string, string>;
  /**
   * Laid over the parent's env (keys added or replaced). The forks' restored
   * processes keep the env they started with; every process started in a
   * fork afterwards gets this one.
   */
  env?: Record<string, string>;
}

export interface PauseOptions {
  /**
   * false: keep only the files. The processes are stopped without a memory
   * image, and the resume starts the sandbox cold (same id, files, limits
   * and env; new processes). Default true: everything is kept.
   */
  memory?: boolean;
}

export interface ResumeOptions {
  /** false: start cold from the files even when the pause kept memory (a restart). Default true. */
  memory?: boolean;
}

/** A sandbox and, under it, the sandboxes forked from its snapshots (recursively). */
export interface ForkTree {
  sandbox: SandboxInfo;
  children: ForkTree[];
}

export interface BuildTemplateOptions {
  /**
   * Each line of build output (setup commands' stdout and stderr, and the
   * build's own steps) as it comes; a Dockerfile build's `Step i/N` and
   * `CACHED` lines come with their step (index, instruction, status).
   */
  onProgress?: (line: string, step?: BuildStep) => void;
  /** Stops waiting for the build (CANCELLED); the build itself carries on on the server. */
  abortSignal?: AbortSignal;
}
