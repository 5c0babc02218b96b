import type { SpawnRequest } from '@forkd/protocol';
import type { ForkdError } from '../vendor/errors.js';
import { StreamPosition, type ResumePoint } from '../vendor/stream-position.js';
import { parseServerMessage, STDERR, STDOUT } from './stream-messages.js';

/** The first message of a stream: start a process, or attach to one that runs. */
export type StreamOpen = { op: 'spawn'; spawn: SpawnRequest } | { op: 'attach'; pid: number; resume?: ResumePoint };

/** The part of the browser's WebSocket a session uses (a fake in unit tests). */
export interface SocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: string | Uint8Array): void;
  close(code?: number): void;
  // `never`: the browser's handlers take its own event types; the session reads only `data`.
  onopen: ((ev: never) => void) | null;
  onmessage: ((ev: never) => void) | null;
  onclose: ((ev: never) => void) | null;
  onerror: ((ev: never) => void) | null;
}

export type SocketFactory = () => SocketLike;

/** What a terminal is told; `text` lines are the console's own notes (shown dimmed, not the process's output). */
export interface TerminalSink {
  output(bytes: Uint8Array): void;
  note(text: string): void;
  /** The shell is gone for good (exited, or the sandbox was rewound to before it); a new one can be opened. */
  ended(): void;
}

const OPEN = 1;
/** Re-attach tries after the connection dropped: 250 ms, doubling to 2 s, for a minute (the SDK's window for a daemon restart). */
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 2000;
const RETRY_FOR_MS = 60_000;
/** The close code of a daemon that is stopping (it ended the stream cleanly; the next one resumes it). */
const RESTARTING = 1012;

/**
 * A live terminal over the API's stream socket. Snapshots, pauses and
 * hibernation pass under an open socket unseen (the server re-attaches its
 * side); when the socket itself drops (a daemon restart, the network), the
 * session re-attaches to the same process from its position (StreamPosition,
 * as the SDK's sessions do: every byte once), for up to a minute. A rewind is
 * said in the terminal; a rewind to before the shell started ends it.
 */
export class TerminalSession {
  readonly #connect: SocketFactory;
  readonly #sink: TerminalSink;
  #socket: SocketLike | undefined;
  #pid = 0;
  readonly #pos = new StreamPosition();
  #tries = 0;
  /** When the connection first dropped (0: it is up). */
  #droppedAt = 0;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #size: { cols: number; rows: number };

  constructor(connect: SocketFactory, spawn: SpawnRequest, sink: TerminalSink) {
    this.#connect = connect;
    this.#sink = sink;
    this.#size = { cols: spawn.cols ?? 80, rows: spawn.rows ?? 24 };
    this.#open({ op: 'spawn', spawn });
  }

  get pid(): number {
    return this.#pid;
  }

  write(data: string | Uint8Array): void {
    if (this.#socket?.readyState !== OPEN || !this.#pid) return;
    this.#socket.send(typeof data === 'string' ? new TextEncoder().encode(data) : data);
  }

  resize(cols: number, rows: number): void {
    this.#size = { cols, rows };
    if (this.#socket?.readyState === OPEN && this.#pid) this.#socket.send(JSON.stringify({ type: 'resize', cols, rows }));
  }

  /** Detaches: the process keeps running in the sandbox. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#socket?.close(1000);
  }

  #open(open: StreamOpen): void {
    const ws = this.#connect();
    this.#socket = ws;
    ws.binaryType = 'arraybuffer';
    let ended = false;
    ws.onopen = () => ws.send(JSON.stringify(open));
    ws.onmessage = (ev: { data: unknown }) => {
      const m = parseServerMessage(ev.data);
      if (m.type === 'data' && (m.stream === STDOUT || m.stream === STDERR)) {
        this.#pos.output(m.bytes.byteLength);
        this.#sink.output(m.bytes);
      } else if (m.type === 'started') {
        this.#pos.started(m);
        this.#started(m.pid, open.op === 'attach');
      } else if (m.type === 'position') this.#pos.moved(m.offset);
      else if (m.type === 'rewound') this.#sink.note('the sandbox was rewound; this shell goes on from that state');
      else if (m.type === 'dropped') this.#sink.note(`${m.bytes} bytes of output were dropped`);
      else if (m.type === 'waiting') this.#sink.note(`waiting for approval ${m.approvalId} (rule ${m.rule}): approve it to start the shell`);
      else if (m.type === 'limit') this.#sink.note(`stopped by the ${m.limit} limit (rule ${m.rule})`);
      else if (m.type === 'exit') {
        ended = true;
        this.#end(m.oomKilled ? 'the shell was killed: out of memory' : `the shell exited (${m.signal ? `signal ${m.signal}` : `code ${m.exitCode}`})`);
      } else if (m.type === 'error') {
        ended = this.#failed(m.error, open.op) || ended;
      }
    };
    ws.onerror = () => {};
    ws.onclose = (ev: { code?: number }) => {
      if (ended || this.#closed || ws !== this.#socket) return;
      this.#dropped(ev.code === RESTARTING);
    };
  }

  #started(pid: number, reattached: boolean): void {
    this.#pid = pid;
    this.#tries = 0;
    this.#droppedAt = 0;
    if (reattached) {
      this.#sink.note('reconnected');
      this.resize(this.#size.cols, this.#size.rows);
    }
  }

  /** An error from the server: true when it ends the session (no reconnect). */
  #failed(err: ForkdError, op: StreamOpen['op']): boolean {
    if (err.code === 'REWOUND') {
      this.#end('the sandbox was rewound to a state before this shell started');
      return true;
    }
    if (!this.#pid || (op === 'attach' && err.code === 'NOT_FOUND')) {
      this.#end(`${err.code}: ${err.message}`);
      return true;
    }
    this.#sink.note(`${err.code}: ${err.message}`);
    return false;
  }

  #dropped(restarting: boolean): void {
    if (!this.#pid) return this.#end('the connection to forkd was lost');
    if (!this.#droppedAt) {
      this.#droppedAt = Date.now();
      this.#sink.note(restarting ? 'forkd is restarting; reconnecting…' : 'connection lost; reconnecting…');
    } else if (Date.now() - this.#droppedAt > RETRY_FOR_MS) return this.#end('the connection to forkd was lost');
    const wait = Math.min(RETRY_FIRST_MS * 2 ** this.#tries++, RETRY_MAX_MS);
    const point = this.#pos.point;
    this.#timer = setTimeout(() => this.#closed || this.#open({ op: 'attach', pid: this.#pid, ...(point ? { resume: point } : {}) }), wait);
  }

  #end(why: string): void {
    this.#closed = true;
    this.#sink.note(why);
    this.#sink.ended();
  }
}
