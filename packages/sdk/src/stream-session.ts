import type { ExecContext } from '@forkd/protocol';
import { ForkdError } from '@forkd/protocol/errors';
import { toBytes } from './bytes.js';
import type { ProcessExit, SignalSpec, StartedProcess, WaitingForApproval } from './types.js';
import { WS_OPEN, type WebSocketLike } from './websocket.js';
import { wireError } from './wire-error.js';
import { deferred, type Deferred } from './deferred.js';
import { retryable, StreamPosition, withReconnect, type ResumePoint } from './resume.js';

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

/** The first message of a stream: start a process, or attach to a running one (`resume`: from where a stream was). */
export type StreamOpen = { op: 'spawn'; spawn: unknown } | { op: 'attach'; pid: number; resume?: ResumePoint } | { op: 'attach'; tag: string };

/** How a session resumes after its socket went (a daemon restart): a new socket to the same place, for so long. */
export interface StreamResume {
  connect(): WebSocketLike;
  reconnectMs: number;
}

/** One socket of a session: a resumed session has had several. */
interface Conn {
  ws: WebSocketLike;
  /** Settles once the server said `started` on it, or refused. */
  started: Deferred<void>;
  /** An error the server sent after the start: the stream's end if the server then closes with 1011. */
  lastError?: ForkdError | undefined;
  failed: boolean;
  /** Its close (or failure to connect) was handled. */
  ended?: boolean;
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

/**
 * A process over the interactive WebSocket: live stdin, output as it comes,
 * resize and signals. Closing the session detaches; the process keeps running.
 * When the socket goes before the exit (a daemon stop, restart or upgrade)
 * and the server gave a resume point, it re-attaches from where it was on a
 * new socket (retrying while forkd is down, see withReconnect): output goes
 * on with nothing lost or repeated, and writes wait meanwhile.
 */
export class StreamSession implements PtySession {
  #conn: Conn;
  readonly #resume: StreamResume | undefined;
  readonly #pos = new StreamPosition();
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
  #info: StartedProcess = { pid: 0, pty: false };
  readonly #onWaiting: ((w: WaitingForApproval) => void) | undefined;
  #pending: Promise<void> | undefined;
  #closing = false;
  /** While the session re-attaches: writes and control messages wait for it. */
  #resuming: Promise<void> | undefined;

  private constructor(ws: WebSocketLike, open: StreamOpen, onWaiting?: (w: WaitingForApproval) => void, resume?: StreamResume) {
    this.#onWaiting = onWaiting;
    this.#resume = resume;
    this.#conn = this.#bind(ws, open);
  }

  #bind(ws: WebSocketLike, open: StreamOpen): Conn {
    const conn: Conn = { ws, started: deferred<void>(), failed: false };
    ws.addEventListener('open', () => ws.send(JSON.stringify(open)));
    ws.addEventListener('message', (ev: { data: unknown }) => this.#inOrder(() => this.#onMessage(conn, ev.data)));
    ws.addEventListener('error', () => {
      conn.failed = true;
      // Node 20's WebSocket reports a refused connection with this event only (no close follows).
      if (ws.readyState !== WS_OPEN) this.#inOrder(() => this.#onClose(conn, 1006, 'cannot connect'));
    });
    ws.addEventListener('close', (ev: { code?: number; reason?: string }) => this.#inOrder(() => this.#onClose(conn, ev.code ?? 0, ev.reason ?? '')));
    return conn;
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
  static async open(ws: WebSocketLike, open: StreamOpen, onWaiting?: (w: WaitingForApproval) => void, resume?: StreamResume): Promise<StreamSession> {
    const s = new StreamSession(ws, open, onWaiting, resume);
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

  /** Sends stdin; resolves when the socket has room again (while the session resumes, once it has). */
  async write(data: string | Uint8Array): Promise<void> {
    const bytes = toBytes(data);
    for (let at = 0; at < bytes.byteLength; at += MAX_FRAME) {
      const ws = await this.#open();
      ws.send(bytes.subarray(at, at + MAX_FRAME));
      while (ws.bufferedAmount > HIGH_WATER && ws.readyState === WS_OPEN) await new Promise((r) => setTimeout(r, 5));
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
    this.#closing = true;
    if (this.#conn.ws.readyState <= WS_OPEN) this.#conn.ws.close(1000);
  }

  /** Sent now, or once the session has resumed (in the order given). */
  #control(msg: object): void {
    const text = JSON.stringify(msg);
    if (!this.#resuming) {
      this.#assertOpen();
      this.#conn.ws.send(text);
      return;
    }
    void this.#open().then(
      (ws) => ws.send(text),
      () => {},
    );
  }

  /** The socket to send on: the current one, or the next once the session has resumed. */
  async #open(): Promise<WebSocketLike> {
    if (this.#resuming) await this.#resuming;
    this.#assertOpen();
    return this.#conn.ws;
  }

  #assertOpen(): void {
    if (this.#conn.ws.readyState !== WS_OPEN) throw new ForkdError('FAILED_PRECONDITION', 'the stream is closed');
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
    this.#pos.output(chunk.byteLength);
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

  #onMessage(conn: Conn, data: unknown): Promise<void> | void {
    if (conn !== this.#conn) return;
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
    return this.#onEvent(conn, msg);
  }

  #onEvent(conn: Conn, msg: { type?: string; [k: string]: unknown }): Promise<void> | void {
    switch (msg.type) {
      case 'started':
        this.#pos.started({ token: msg.token, offset: msg.offset });
        conn.started.resolve();
        if (this.#started.settled) break;
        this.#info = { pid: Number(msg.pid), tag: typeof msg.tag === 'string' ? msg.tag : undefined, pty: msg.pty === true };
        this.#started.resolve(this.#info);
        break;
      case 'position':
        this.#pos.moved(Number(msg.offset));
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
        if (!conn.started.settled) this.#refused(conn, err);
        else conn.lastError = err;
        break;
      }
    }
  }

  /** The socket's open was refused (or it closed before `started`): the session's, or one resume attempt's. */
  #refused(conn: Conn, err: ForkdError): void {
    conn.started.reject(err);
    if (this.#started.settled) return;
    this.#started.reject(err);
    this.#exit.reject(err);
  }

  #onClose(conn: Conn, code: number, reason: string): void {
    if (conn !== this.#conn || conn.ended) return;
    conn.ended = true;
    const why = `stream closed (code ${code}${reason ? `: ${reason}` : ''})`;
    if (!conn.started.settled) {
      this.#refused(conn, new ForkdError('UNAVAILABLE', conn.failed ? `cannot open the stream: ${why}` : `${why} before the process started`));
      return;
    }
    if (this.#exit.settled || this.#resuming) return;
    // 1011: the server ended the stream with the error it sent last (REWOUND, the sandbox deleted, ...).
    const ended = code === 1011 && conn.lastError ? conn.lastError : undefined;
    if (ended && !retryable(ended)) this.#exit.reject(ended);
    else if (!this.#closing && this.#pos.point && this.#resume && this.#resume.reconnectMs > 0) this.#resumeStream(this.#pos.point, this.#resume);
    else if (ended) this.#exit.reject(ended);
    else if (conn.failed) this.#exit.reject(new ForkdError('UNAVAILABLE', `connection to forkd lost: ${why}`));
    else this.#exit.resolve(null);
  }

  /** Re-attaches on new sockets until one starts, forkd refuses, or the time is up (the exit then fails with why). */
  #resumeStream(at: ResumePoint, r: StreamResume): void {
    const once = async () => {
      if (this.#closing) throw new ForkdError('CANCELLED', 'the session was closed');
      const conn = this.#bind(r.connect(), { op: 'attach', pid: this.#info.pid, resume: this.#pos.point ?? at });
      this.#conn = conn;
      await conn.started.promise;
    };
    this.#resuming = withReconnect(once, { timeoutMs: r.reconnectMs, what: `the stream of process ${this.#info.pid}` }).then(
      () => {
        this.#resuming = undefined;
        if (this.#closing) this.close();
      },
      (err: unknown) => {
        this.#resuming = undefined;
        if (this.#closing) this.#exit.resolve(null);
        else this.#exit.reject(err);
      },
    );
  }
}
