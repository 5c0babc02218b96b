import type { ExecContext } from '@forkd/protocol';
import { ForkdError } from '@forkd/protocol/errors';
import { toBytes } from './bytes.js';
import type { ProcessExit, SignalSpec, StartedProcess, WaitingForApproval } from './types.js';
import { WS_OPEN, type WebSocketLike } from './websocket.js';
import { wireError } from './wire-error.js';

const STDOUT = 1;
const STDERR = 2;
/** The server refuses WebSocket messages over 1 MiB. */
const MAX_FRAME = 256 * 1024;
/** Above this much unsent stdin, `write` waits, so a fast producer does not grow memory. */
const HIGH_WATER = 1024 * 1024;
/** Output that arrives before anyone listens is kept up to this much per stream. */
const MAX_UNHEARD = 16 * 1024 * 1024;

type Listener = (chunk: Uint8Array) => void;

/** What a terminal session offers; `StreamSession` implements it. */
export interface PtySession {
  readonly pid: number;
  /** Resolves with the exit, or null when the socket closed first (the process keeps running). */
  readonly exit: Promise<ProcessExit | null>;
  write(data: string | Uint8Array): Promise<void>;
  resize(cols: number, rows: number): void;
  onData(cb: Listener): () => void;
  /** The sandbox was rewound under the session and its process goes on from that state. */
  onRewound(cb: () => void): () => void;
  signal(signal: SignalSpec): void;
  close(): void;
}

/** The first message of a stream: start a process, or attach to a running one. */
export type StreamOpen = { op: 'spawn'; spawn: unknown } | { op: 'attach'; pid: number } | { op: 'attach'; tag: string };

interface Deferred<T> {
  promise: Promise<T>;
  resolve(v: T): void;
  reject(e: unknown): void;
  settled: boolean;
}

let contextParser: Promise<(raw: unknown) => { context?: ExecContext }> | undefined;

/**
 * A waiting message's context, when it is a well-formed one (a frame from an
 * older or odd server is shown without it). The schemas load on the first
 * waiting frame only: loading them costs a CLI call more than its round trip.
 */
function waitingContext(): Promise<(raw: unknown) => { context?: ExecContext }> {
  contextParser ??= import('@forkd/protocol').then(({ ExecContext: schema }) => (raw: unknown) => {
    const p = schema.safeParse(raw);
    return p.success ? { context: p.data } : {};
  });
  return contextParser;
}

function deferred<T>(): Deferred<T> {
  const d = { settled: false } as Deferred<T>;
  d.promise = new Promise<T>((res, rej) => {
    d.resolve = (v) => {
      d.settled = true;
      res(v);
    };
    d.reject = (e) => {
      d.settled = true;
      rej(e);
    };
  });
  // Nobody may ever await it (a detached session); that is not an unhandled rejection.
  d.promise.catch(() => {});
  return d;
}

/**
 * A process over the interactive WebSocket: live stdin, output as it comes,
 * resize and signals. Closing the session detaches; the process keeps running.
 */
export class StreamSession implements PtySession {
  readonly #ws: WebSocketLike;
  readonly #started = deferred<StartedProcess>();
  readonly #exit = deferred<ProcessExit | null>();
  readonly #listeners = new Map<number, Set<Listener>>([
    [STDOUT, new Set()],
    [STDERR, new Set()],
  ]);
  readonly #unheard = new Map<number, Uint8Array[]>([
    [STDOUT, []],
    [STDERR, []],
  ]);
  readonly #unheardBytes = new Map<number, number>([
    [STDOUT, 0],
    [STDERR, 0],
  ]);
  readonly #dropped = new Set<(bytes: number) => void>();
  readonly #rewound = new Set<() => void>();
  /** An error the server sent after the start: the stream's end if the server then closes with 1011. */
  #lastError: ForkdError | undefined;
  #info: StartedProcess = { pid: 0, pty: false };
  #socketFailed = false;
  readonly #onWaiting: ((w: WaitingForApproval) => void) | undefined;
  #pending: Promise<void> | undefined;

  private constructor(ws: WebSocketLike, open: StreamOpen, onWaiting?: (w: WaitingForApproval) => void) {
    this.#ws = ws;
    this.#onWaiting = onWaiting;
    ws.addEventListener('open', () => ws.send(JSON.stringify(open)));
    ws.addEventListener('message', (ev: { data: unknown }) => this.#inOrder(() => this.#onMessage(ev.data)));
    ws.addEventListener('error', () => {
      this.#socketFailed = true;
    });
    ws.addEventListener('close', (ev: { code?: number; reason?: string }) => this.#inOrder(() => this.#onClose(ev.code ?? 0, ev.reason ?? '')));
  }

  /** Handles an event now, or after the ones still being handled (a waiting frame loading its schema): callbacks keep the wire's order. */
  #inOrder(handle: () => Promise<void> | void): void {
    const pending = this.#pending ? this.#pending.then(handle) : handle();
    if (!pending) return;
    const settled = pending.catch(() => {});
    this.#pending = settled;
    void settled.then(() => {
      if (this.#pending === settled) this.#pending = undefined;
    });
  }

  /** Sends the open request and resolves once the process runs (rejects with the server's error otherwise). */
  static async open(ws: WebSocketLike, open: StreamOpen, onWaiting?: (w: WaitingForApproval) => void): Promise<StreamSession> {
    const s = new StreamSession(ws, open, onWaiting);
    await s.#started.promise;
    return s;
  }

  get pid(): number {
    return this.#info.pid;
  }

  get tag(): string | undefined {
    return this.#info.tag;
  }

  get pty(): boolean {
    return this.#info.pty;
  }

  get exit(): Promise<ProcessExit | null> {
    return this.#exit.promise;
  }

  /** stdout (or the terminal's output); output that arrived before the first listener is replayed to it. */
  onStdout(cb: Listener): () => void {
    return this.#listen(STDOUT, cb);
  }

  onStderr(cb: Listener): () => void {
    return this.#listen(STDERR, cb);
  }

  onData(cb: Listener): () => void {
    return this.#listen(STDOUT, cb);
  }

  onDropped(cb: (bytes: number) => void): () => void {
    this.#dropped.add(cb);
    return () => this.#dropped.delete(cb);
  }

  /** The sandbox was rewound under this stream and its process goes on from that state (see ProcessHandlerOptions.onRewound). */
  onRewound(cb: () => void): () => void {
    this.#rewound.add(cb);
    return () => this.#rewound.delete(cb);
  }

  /** Sends stdin; resolves when the socket has room again. */
  async write(data: string | Uint8Array): Promise<void> {
    const bytes = toBytes(data);
    for (let at = 0; at < bytes.byteLength; at += MAX_FRAME) {
      this.#assertOpen();
      this.#ws.send(bytes.subarray(at, at + MAX_FRAME));
      while (this.#ws.bufferedAmount > HIGH_WATER && this.#ws.readyState === WS_OPEN) await new Promise((r) => setTimeout(r, 5));
    }
  }

  closeStdin(): void {
    this.#control({ type: 'stdin_eof' });
  }

  resize(cols: number, rows: number): void {
    this.#control({ type: 'resize', cols, rows });
  }

  signal(signal: SignalSpec): void {
    this.#control({ type: 'signal', signal });
  }

  /** Detaches: the process keeps running and can be attached again. */
  close(): void {
    if (this.#ws.readyState <= WS_OPEN) this.#ws.close(1000);
  }

  #control(msg: object): void {
    this.#assertOpen();
    this.#ws.send(JSON.stringify(msg));
  }

  #assertOpen(): void {
    if (this.#ws.readyState !== WS_OPEN) throw new ForkdError('FAILED_PRECONDITION', 'the stream is closed');
  }

  #listen(stream: number, cb: Listener): () => void {
    const set = this.#listeners.get(stream)!;
    set.add(cb);
    const backlog = this.#unheard.get(stream)!;
    if (backlog.length) {
      this.#unheard.set(stream, []);
      this.#unheardBytes.set(stream, 0);
      for (const chunk of backlog) cb(chunk);
    }
    return () => set.delete(cb);
  }

  #emit(stream: number, chunk: Uint8Array): void {
    const set = this.#listeners.get(stream);
    if (!set) return;
    if (set.size) {
      for (const cb of set) cb(chunk);
      return;
    }
    const held = this.#unheardBytes.get(stream)! + chunk.byteLength;
    if (held > MAX_UNHEARD) return;
    this.#unheard.get(stream)!.push(chunk);
    this.#unheardBytes.set(stream, held);
  }

  #onMessage(data: unknown): Promise<void> | void {
    if (typeof data !== 'string') {
      const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : null;
      if (bytes && bytes.byteLength > 0) this.#emit(bytes[0]!, bytes.subarray(1));
      return;
    }
    let msg: { type?: string; [k: string]: unknown };
    try {
      msg = JSON.parse(data) as typeof msg;
    } catch {
      return;
    }
    switch (msg.type) {
      case 'started':
        this.#info = { pid: Number(msg.pid), tag: typeof msg.tag === 'string' ? msg.tag : undefined, pty: msg.pty === true };
        this.#started.resolve(this.#info);
        break;
      case 'exit':
        this.#exit.resolve({ exitCode: Number(msg.exitCode), signal: Number(msg.signal), oomKilled: msg.oomKilled === true });
        break;
      case 'dropped':
        for (const cb of this.#dropped) cb(Number(msg.bytes));
        break;
      case 'rewound':
        for (const cb of this.#rewound) cb();
        break;
      case 'waiting': {
        const notify = this.#onWaiting;
        if (!notify) break;
        const w = { approvalId: String(msg.approvalId), rule: String(msg.rule), expiresAt: String(msg.expiresAt) };
        return waitingContext().then((parse) => notify({ ...w, ...parse(msg.context) }));
      }
      case 'error': {
        const err = wireError(msg.error as { code?: unknown; message?: unknown });
        // Before `started` the open failed; after, it is a refused control message and the process runs on.
        if (!this.#started.settled) {
          this.#started.reject(err);
          this.#exit.reject(err);
        } else this.#lastError = err;
        break;
      }
    }
  }

  #onClose(code: number, reason: string): void {
    const why = `stream closed (code ${code}${reason ? `: ${reason}` : ''})`;
    if (!this.#started.settled) {
      const err = new ForkdError('UNAVAILABLE', this.#socketFailed ? `cannot open the stream: ${why}` : `${why} before the process started`);
      this.#started.reject(err);
      this.#exit.reject(err);
    } else if (!this.#exit.settled) {
      if (this.#socketFailed) this.#exit.reject(new ForkdError('UNAVAILABLE', `connection to forkd lost: ${why}`));
      // 1011: the server ended the stream with the error it sent last (REWOUND, the sandbox deleted, ...).
      else if (code === 1011 && this.#lastError) this.#exit.reject(this.#lastError);
      else this.#exit.resolve(null);
    }
  }
}
