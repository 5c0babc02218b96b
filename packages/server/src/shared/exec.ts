import { spawn, type StdioOptions } from 'node:child_process';
import { Duplex } from 'node:stream';
import { ForkdError } from '@forkd/protocol';
import { endSpan, profiling } from './profile.js';

export interface ExecOptions {
  input?: string | Buffer;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  timeoutMs?: number;
  /** Resolve with the non-zero exit code instead of throwing. */
  allowFailure?: boolean;
  /** Called with every chunk of stderr (progress output of long tools). */
  onStderr?: (chunk: string) => void;
  onStdout?: (chunk: string) => void;
  /** Called with the child's pid once it runs (to watch it: a pull's bytes read, /proc/PID/io). */
  onSpawn?: ((pid: number) => void) | undefined;
  /** What the child gets as stdin when there is no input (default: ignore). */
  stdio?: StdioOptions;
  /**
   * The child's umask instead of the daemon's private 077 (shared/private-state.ts):
   * for tools that build files sandboxes will see (debootstrap of a template root).
   */
  umask?: number;
  /** In a session of its own (a helper daemon that must outlive the daemon's process group); only with all stdio ignored through forkd-spawn. */
  detached?: boolean;
  /**
   * A detached child through forkd-spawn is held: killed if the daemon dies
   * before the function given here is called (Node's own spawn cannot hold one).
   */
  onHeld?: ((release: () => void) => void) | undefined;
}

export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

const TAIL = 4000;

/** One span for every subprocess's start (not part of its own `exec` span, which begins once spawn returns). */
export const SPAWN_SPAN = 'spawn (fork+exec, event loop blocked)';

/** How a run of a tool ended, before it becomes exec's result or error. */
export interface ExecOutcome {
  /** Null when a signal ended it. */
  code: number | null;
  signal: boolean;
  stdout: string;
  stderr: string;
  timedOut: boolean;
}

/**
 * Runs tools for exec() without forking the daemon (shared/resident-spawner.ts):
 * undefined when it cannot take this one (the daemon then spawns it itself).
 */
export interface ResidentExec {
  run(file: string, args: readonly string[], opts: ExecOptions): Promise<ExecOutcome> | undefined;
}

let resident: ResidentExec | undefined;

/** The daemon's resident spawner for every later exec() (undefined: none; tests and the CLI spawn themselves). */
export function setResidentExec(r: ResidentExec | undefined): void {
  resident = r;
}

/**
 * The one way forkd runs a subprocess: argv only (never a shell string), a
 * bounded capture, and a ForkdError carrying the command and the tool's
 * stderr tail when it fails, so `btrfs`, `runc` or `criu` failures reach the
 * server's log (and admin keys) with the cause; tenants get the code and a
 * request id (control-plane/http/public-error.ts). In the daemon a resident
 * spawner starts it when it can: a fork of the daemon itself costs 5-20 ms
 * of a stopped event loop.
 */
export function exec(file: string, args: readonly string[], opts: ExecOptions = {}): Promise<ExecResult> {
  const startMs = profiling() ? performance.now() : 0;
  const run = resident?.run(file, args, opts) ?? spawnHere(file, args, opts);
  return run.then((o) => {
    if (startMs) endSpan(`exec ${spanName(file, args)}`, startMs);
    const exitCode = o.code ?? 128 + (o.signal ? 9 : 0);
    if (o.timedOut) throw new ForkdError('TIMEOUT', `${file} timed out after ${opts.timeoutMs} ms`, details(file, args, exitCode, o.stderr));
    if (exitCode !== 0 && !opts.allowFailure) throw new ForkdError('INTERNAL', `${file} ${args[0] ?? ''} failed (exit ${exitCode}): ${lastLine(o.stderr)}`, details(file, args, exitCode, o.stderr));
    return { code: exitCode, stdout: o.stdout, stderr: o.stderr };
  });
}

/** A tool that could not be started at all. */
export function cannotRun(file: string, args: readonly string[], message: string, cause?: unknown): ForkdError {
  return new ForkdError('INTERNAL', `cannot run ${file}: ${message}`, { cmd: [file, ...args].join(' ') }, cause === undefined ? undefined : { cause });
}

/** Node's own spawn: a fork of this process. */
export function spawnHere(file: string, args: readonly string[], opts: ExecOptions): Promise<ExecOutcome> {
  return new Promise((resolve, reject) => {
    // A child inherits the umask at fork, and spawn forks synchronously: set ours around it, nothing else runs meanwhile.
    const previous = opts.umask === undefined ? undefined : process.umask(opts.umask & 0o777);
    // The synchronous part: libuv forks the daemon and waits for the child's exec, the event loop stopped meanwhile.
    const forkMs = profiling() ? performance.now() : 0;
    let child;
    try {
      child = spawn(file, args, {
        env: opts.env ?? process.env,
        cwd: opts.cwd,
        stdio: opts.stdio ?? [opts.input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
        detached: opts.detached,
      });
    } finally {
      if (previous !== undefined) process.umask(previous);
      if (forkMs) endSpan(SPAWN_SPAN, forkMs);
    }
    if (child.pid !== undefined) opts.onSpawn?.(child.pid);
    let stdout = '';
    let stderr = '';
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    if (opts.timeoutMs) {
      timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, opts.timeoutMs);
    }
    child.stdout?.setEncoding('utf8').on('data', (d: string) => {
      opts.onStdout?.(d);
      stdout += d;
      if (stdout.length > 64 * 1024 * 1024) stdout = stdout.slice(-32 * 1024 * 1024);
    });
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      opts.onStderr?.(d);
      stderr = (stderr + d).slice(-64 * 1024);
    });
    child.on('error', (err) => {
      if (timer) clearTimeout(timer);
      reject(cannotRun(file, args, err.message, err));
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ code, signal: signal !== null, stdout, stderr, timedOut });
    });
    if (opts.input !== undefined && child.stdin) {
      child.stdin.on('error', () => {});
      child.stdin.end(opts.input);
    }
  });
}

function details(file: string, args: readonly string[], exitCode: number, stderr: string): Record<string, unknown> {
  return { cmd: [file, ...args].join(' '), exitCode, stderrTail: stderr.slice(-TAIL) };
}

/** A subprocess's span: the tool and its first word (a subcommand: not an option, its value, a path or a number). */
function spanName(file: string, args: readonly string[]): string {
  const tool = file.slice(file.lastIndexOf('/') + 1);
  const word = args.find((a, k) => /^[a-z][a-z-]*$/.test(a) && !(k > 0 && args[k - 1]!.startsWith('--')));
  return word ? `${tool} ${word}` : tool;
}

function lastLine(s: string): string {
  const lines = s.trim().split('\n');
  return (lines[lines.length - 1] ?? '').slice(0, 300);
}

/**
 * Starts a helper daemon that must outlive this call (and this process): its
 * own session, no stdio of ours. Returns its pid; errors come from its logs.
 */
export function spawnDaemon(file: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env, onExit?: () => void): number {
  // Node's spawn: this one outlives forkd-spawn, which would report it gone when it ends (a netns holder).
  const forkMs = profiling() ? performance.now() : 0;
  const child = spawn(file, args, { env, detached: true, stdio: 'ignore' });
  if (forkMs) endSpan(SPAWN_SPAN, forkMs);
  child.on('error', () => onExit?.());
  if (onExit) child.on('exit', onExit);
  child.unref();
  return child.pid ?? 0;
}

/**
 * A helper whose stdin and stdout are a byte stream (a relayed connection).
 * Resolves `exit` with its code and stderr tail once it ends.
 */
export function spawnStream(file: string, args: readonly string[]): { stream: Duplex; exit: Promise<{ code: number; stderr: string }>; pid: number; kill(): void } {
  const child = spawn(file, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-TAIL);
  });
  child.stdin!.on('error', () => {});
  const exit = new Promise<{ code: number; stderr: string }>((resolve) => {
    child.on('error', (err) => resolve({ code: 127, stderr: err.message }));
    child.on('close', (code) => resolve({ code: code ?? 1, stderr }));
  });
  return { stream: Duplex.from({ readable: child.stdout!, writable: child.stdin! }), exit, pid: child.pid ?? 0, kill: () => child.kill('SIGKILL') };
}

/**
 * A helper given two connected sockets as its stdin and stdout (duplicated
 * into it: the caller may close its own handles at once). Resolves with its
 * exit code once it ends.
 */
export function spawnWithSockets(file: string, args: readonly string[], fds: [import('node:net').Socket, import('node:net').Socket]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(file, args, { stdio: [fds[0], fds[1], 'ignore'] });
    child.on('error', () => resolve(127));
    child.on('close', (code) => resolve(code ?? 1));
  });
}

/** A resident helper spoken to over Node's IPC channel (JSON lines; sockets cross it as SCM_RIGHTS). */
export interface IpcChild {
  pid: number;
  /** False when the channel is closed (the message was not sent). */
  send(message: string): boolean;
  /** Whether its channel keeps this process's event loop alive (while it works for us). */
  ref(on: boolean): void;
  onMessage(fn: (message: unknown, handle: unknown) => void): void;
  /** Once it exits (or cannot start), with the tail of its stderr. */
  exit: Promise<{ code: number; stderr: string }>;
  kill(): void;
}

/**
 * Starts `file` with an IPC channel (NODE_CHANNEL_FD) and a captured stderr.
 * Neither the child nor its channel keeps the daemon's event loop alive.
 */
export function spawnIpc(file: string, args: readonly string[]): IpcChild {
  const child = spawn(file, args, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'json' });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr = (stderr + d).slice(-TAIL);
  });
  const exit = new Promise<{ code: number; stderr: string }>((resolve) => {
    child.on('error', (err) => resolve({ code: 127, stderr: err.message }));
    child.on('close', (code) => resolve({ code: code ?? 1, stderr }));
  });
  child.unref();
  child.channel?.unref();
  (child.stderr as { unref?: () => void } | null)?.unref?.();
  return {
    pid: child.pid ?? 0,
    // Node's send is false also when its queue is long, with the message queued all the same: only a closed channel refuses one.
    send: (m) => {
      if (!child.connected) return false;
      child.send(m, (err) => err && child.kill('SIGKILL'));
      return true;
    },
    // Both: the channel for its answers, the process for its exit (an answer that never comes).
    ref: (on) => {
      if (on) {
        child.ref();
        child.channel?.ref();
      } else {
        child.unref();
        child.channel?.unref();
      }
    },
    onMessage: (fn) => child.on('message', fn),
    exit,
    kill: () => child.kill('SIGKILL'),
  };
}

/** How a helper daemon ended: status 0, a failure (non-zero, a signal), or not known (forkd-spawn, which watched it, ended first). */
export type HelperEnd = 'clean' | 'failed' | 'unknown';

/**
 * A helper daemon for one operation (a lazy restore's), started through the
 * resident spawner where there is one (Node's spawn stops the event loop for a
 * fork of the daemon, 1-5 ms each), in a session of its own, stdio
 * /dev/null. `pid` is 0 when it could not be started (then `exited` is
 * 'failed'); `exited` resolves once it ended or could not be watched any
 * more. It dies with the daemon until `release` (see ExecOptions.onHeld).
 */
export function spawnHelperDaemon(file: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): { pid: Promise<number>; exited: Promise<HelperEnd>; release(): void } {
  let started!: (pid: number) => void;
  let release = () => {};
  let ran = false;
  const pid = new Promise<number>((resolve) => (started = resolve));
  const opts: ExecOptions = { env, stdio: ['ignore', 'ignore', 'ignore'], detached: true, onSpawn: (p) => ((ran = true), started(p)), onHeld: (r) => (release = r) };
  const exited = (resident?.run(file, args, opts) ?? spawnHere(file, args, opts)).then(
    (o): HelperEnd => (started(0), o.code === 0 ? 'clean' : 'failed'),
    // A spawn that failed, or forkd-spawn gone: only the latter leaves it possibly running.
    (): HelperEnd => (started(0), ran ? 'unknown' : 'failed'),
  );
  return { pid, exited, release: () => release() };
}
