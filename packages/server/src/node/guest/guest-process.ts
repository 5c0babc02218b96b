import type { GuestConnection } from './guest-connection.js';
import { guestError } from './guest-connection.js';
import { K, MAX_DATA, ProtocolError, T, Tlv, type TlvInput } from './guest-frames.js';

// The contract's types (node-contract/node-types.ts), re-exported for the guest side.
import type { OutputHandlers, ProcessExit } from '../../node-contract/node-types.js';
export type { OutputHandlers, ProcessExit };

/**
 * Why a process stream ended without an exit: the client let go (`client`),
 * the host let go before a snapshot (`quiesce`, see GuestClient.quiesce), or
 * the connection broke (`lost`: the sandbox stopped, the agent died).
 */
export type DetachReason = 'client' | 'quiesce' | 'lost';

/** Bytes of an output frame as the guest's ring counts them: u32 length, type, data. */
const FRAME_OVERHEAD = 5;
/** How long a snapshot waits for the guest to confirm a detach before it cuts the connection. */
const DETACH_DEADLINE_MS = 500;

/**
 * A process seen through one guest connection. Closing it detaches: the
 * process keeps running inside the sandbox and can be re-attached. With
 * protocol 2 the stream is resumable: it knows the ring offset it has
 * received up to (acknowledged to the guest, which keeps what is not), the
 * process's token, and on a detach before a snapshot how much of its stdin
 * the guest took.
 */
export class GuestProcess {
  readonly pid: number;
  readonly tag: string | undefined;
  readonly pty: boolean;
  /** Random per spawn (protocol 2); undefined from an older agent, whose streams cannot resume. */
  readonly token: number | undefined;
  /** Ring offset this stream started at. */
  readonly startOffset: number;
  /** The exit, or null when the connection ended first (see `reason`). */
  readonly done: Promise<ProcessExit | null>;
  reason: DetachReason = 'lost';
  /** Stdin bytes the guest took from this connection, as it said when it let go (quiesce only). */
  stdinAccepted: number | undefined;
  readonly #conn: GuestConnection;
  #offset: number;
  #acked: number;
  #ackQueued = false;

  /** `expectOffset`: where a resuming attach asked to start; starting elsewhere is told first (`onPosition`). */
  constructor(conn: GuestConnection, started: Tlv, handlers: OutputHandlers, expectOffset?: number) {
    this.#conn = conn;
    this.pid = started.reqInt(K.PID);
    this.tag = started.str(K.TAG);
    this.pty = started.int(K.PTY) === 1;
    this.token = conn.version >= 2 ? started.int(K.TOKEN) : undefined;
    this.startOffset = started.int(K.OFFSET) ?? 0;
    this.#offset = this.#acked = this.startOffset;
    conn.onQuiesce = () => this.#letGo();
    this.done = this.#pump(handlers, expectOffset);
    this.done.catch(() => {});
  }

  get resumable(): boolean {
    return this.token !== undefined;
  }

  /** Ring offset of everything received so far: where a re-attach resumes. */
  get offset(): number {
    return this.#offset;
  }

  async #pump(h: OutputHandlers, expectOffset: number | undefined): Promise<ProcessExit | null> {
    try {
      if (expectOffset !== undefined && this.token !== undefined && this.startOffset !== expectOffset) await h.onPosition?.(this.startOffset);
      for (;;) {
        const f = await this.#conn.next();
        if (!f) return null;
        switch (f.type) {
          case T.STDOUT:
            await h.onStdout?.(f.payload);
            this.#received(f.payload.length);
            break;
          case T.STDERR:
            await h.onStderr?.(f.payload);
            this.#received(f.payload.length);
            break;
          case T.DROPPED:
            await h.onDropped?.(new Tlv(f.payload).reqInt(K.DROPPED));
            break;
          case T.DETACHED:
            this.stdinAccepted = new Tlv(f.payload).reqInt(K.SIZE);
            this.reason = 'quiesce';
            return null;
          case T.EXIT: {
            const t = new Tlv(f.payload);
            const exit = { exitCode: t.reqInt(K.EXIT_CODE), signal: t.int(K.SIGNAL) ?? 0 };
            // The guest keeps the exit until it hears this, so a snapshot cannot lose it.
            if (this.resumable) this.#conn.closeWith(T.ACK, [[K.OFFSET, this.#offset], [K.EOF, true]]);
            return exit;
          }
          case T.ERROR:
            throw guestError(new Tlv(f.payload));
          default:
            throw new ProtocolError(`unexpected frame 0x${f.type.toString(16)} in process stream`);
        }
      }
    } finally {
      this.#conn.close();
    }
  }

  /** Acknowledges received output once per event-loop turn, whatever the number of frames. */
  #received(n: number): void {
    this.#offset += FRAME_OVERHEAD + n;
    if (!this.resumable || this.#ackQueued) return;
    this.#ackQueued = true;
    setImmediate(() => {
      this.#ackQueued = false;
      if (this.#acked === this.#offset || this.#conn.closed) return;
      this.#acked = this.#offset;
      this.#conn.send(T.ACK, [[K.OFFSET, this.#offset]]);
    });
  }

  /** Before a snapshot: the guest confirms (DETACHED) once it has handled everything sent before. */
  async #letGo(): Promise<void> {
    if (this.#conn.closed) return;
    this.reason = 'quiesce';
    if (this.resumable) {
      this.#conn.send(T.DETACH);
      await Promise.race([this.done, this.#conn.closedWithin(DETACH_DEADLINE_MS)]);
    }
    this.#conn.close();
  }

  async write(data: Buffer): Promise<void> {
    for (let off = 0; off < data.length; off += MAX_DATA) {
      if (!this.#conn.sendRaw(T.STDIN, data.subarray(off, off + MAX_DATA))) await this.#conn.drained();
    }
  }

  /** Control messages are best effort: the process may have exited and its stream closed already. */
  #control(type: number, fields: TlvInput = []): void {
    if (!this.#conn.closed) this.#conn.send(type, fields);
  }

  closeStdin(): void {
    this.#control(T.STDIN_EOF);
  }

  signal(signal: number): void {
    this.#control(T.SIGNAL, [[K.SIGNAL, signal]]);
  }

  resize(cols: number, rows: number): void {
    this.#control(T.RESIZE, [
      [K.COLS, cols],
      [K.ROWS, rows],
    ]);
  }

  get closed(): boolean {
    return this.#conn.closed;
  }

  detach(): void {
    this.reason = 'client';
    this.#conn.close();
  }

  /** Lets go as before a snapshot (DETACH): the guest holds the output for a re-attach instead of dropping it. */
  release(): void {
    void this.#letGo();
  }
}
