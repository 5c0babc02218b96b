import { createConnection, type OnReadOpts, type Socket } from 'node:net';
import { ForkdError } from '@forkd/protocol';
import { guardListener } from '../../shared/connection-guard.js';
import { encodeFrame, encodeTlv, frameHeader, MAX_DATA, FrameReader, ProtocolError, T, K, Tlv, FORKD_GUEST_PROTOCOL, FORKD_GUEST_PROTOCOL_MIN, type Frame, type TlvInput } from './guest-frames.js';

/** Maps the guest's errno names onto forkd's closed error table. */
export function guestError(t: Tlv): ForkdError {
  const code = t.str(K.CODE) ?? 'EIO';
  const message = t.str(K.MESSAGE) ?? code;
  const details = { errno: code };
  switch (code) {
    case 'ENOENT':
    case 'ESRCH':
      return new ForkdError('NOT_FOUND', message, details);
    case 'EEXIST':
      return new ForkdError('ALREADY_EXISTS', message, details);
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return new ForkdError('PERMISSION_DENIED', message, details);
    case 'EBUSY':
      return new ForkdError('CONFLICT', message, details);
    case 'EPIPE':
      return new ForkdError('FAILED_PRECONDITION', message, details);
    case 'EOVERFLOW':
    case 'EISDIR':
    case 'ENOTDIR':
    case 'EINVAL':
    case 'ENOTEMPTY':
    case 'ENAMETOOLONG':
    case 'ELOOP':
    case 'EXDEV':
      return new ForkdError('INVALID_ARGUMENT', message, details);
    case 'ENOSPC':
    case 'EMFILE':
    case 'ENFILE':
    case 'ENOMEM':
    case 'EAGAIN':
    case 'EDQUOT':
      return new ForkdError('RESOURCE_EXHAUSTED', message, details);
    default:
      return new ForkdError('INTERNAL', message, details);
  }
}

/**
 * How long the host waits for the guest agent by default: to accept a
 * connection, to answer HELLO, to answer a request, and between two frames
 * of a listing or file transfer (progress, not the whole length). An agent
 * that stops answering (stopped, wedged, a tenant's doing) must not hold a
 * caller, or the sandbox's lifecycle lock behind it, for ever.
 */
export const GUEST_DEADLINE_MS = 30_000;

function timedOut(what: string, ms: number): ForkdError {
  return new ForkdError('TIMEOUT', `guest agent did not ${what} within ${Math.round(ms / 100) / 10} s`, { timeoutMs: ms });
}

/**
 * Opens a new stream to a guest agent, connecting (it emits `connect` once
 * usable, `error` if not), whose reads go into `onread`'s buffer and to its
 * callback (net's `onread`): the one thing a guest transport decides about
 * a connection. A Unix socket path for containers (unixDialer); a vsock
 * dialer for a future microVM.
 */
export type GuestDialer = (onread: OnReadOpts) => Socket;

/** Dials the agent's Unix socket at `path` (each call a new connection). */
export function unixDialer(path: string): GuestDialer {
  return (onread) => createConnection({ path, onread });
}

/**
 * The one buffer every guest connection reads into. Safe to share: each read
 * is handed to its connection's callback, which copies what it keeps, before
 * any socket reads again. A fresh 64 KiB buffer per read (net's default) and
 * the frames cut from it made ~3 allocations per frame of a download; the
 * daemon's CPU per 100 MB read fell from ~300 to ~170 ms with this alone
 * (most of it collecting those buffers).
 */
const READ_BUFFER = Buffer.allocUnsafe(256 * 1024);

/**
 * One connection = one operation (see docs/guest-protocol.md). Frames are
 * pulled with `next()`; a bounded queue plus pausing the socket keeps a fast
 * guest from flooding host memory.
 */
export class GuestConnection {
  readonly #socket: Socket;
  readonly #reader = new FrameReader();
  #queue: Frame[] = [];
  #waiter: { resolve: (f: Frame | null) => void; reject: (e: Error) => void } | undefined;
  #ended = false;
  #error: Error | undefined;
  agent = '';
  /** Deadline of each answer (see GUEST_DEADLINE_MS). */
  deadlineMs = GUEST_DEADLINE_MS;
  /** The protocol version agreed in HELLO. */
  version = FORKD_GUEST_PROTOCOL;
  /**
   * How to let go of this connection before a snapshot (see GuestClient.quiesce);
   * unset: it is a short request, waited for.
   */
  onQuiesce: (() => Promise<void>) | undefined;

  private constructor(dial: GuestDialer) {
    // The agent runs inside the sandbox: whatever it sends, a throw here fails this connection only.
    const guard = <A extends unknown[]>(fn: (...args: A) => void) => guardListener('guest', (err) => this.#fail(err instanceof Error ? err : new ProtocolError(String(err))), fn);
    const received = guard((n: number, buf: Uint8Array) => this.#received(buf, n));
    const socket = dial({ buffer: READ_BUFFER, callback: (n, buf) => (received(n, buf), true) });
    this.#socket = socket;
    socket.on('end', guard(() => {
      this.#ended = true;
      this.#wake();
    }));
    socket.on('close', guard(() => {
      this.#ended = true;
      this.#wake();
    }));
    socket.on('error', guard((err: NodeJS.ErrnoException) => {
      // A write racing the guest's close (EPIPE) must not hide frames already received.
      if (err.code === 'EPIPE' || err.code === 'ECONNRESET') {
        this.#ended = true;
        this.#wake();
      } else this.#fail(err);
    }));
  }

  #received(buf: Uint8Array, n: number): void {
    let frames: Frame[];
    try {
      frames = this.#reader.push(Buffer.from(buf.buffer, buf.byteOffset, n), true);
    } catch (err) {
      this.#fail(err as Error);
      return;
    }
    this.#queue.push(...frames);
    if (this.#queue.length > 64) this.#socket.pause();
    this.#wake();
  }

  /** Called once when the socket is gone (either side closed it). */
  onClose(cb: () => void): void {
    if (this.#socket.destroyed) cb();
    else this.#socket.once('close', cb);
  }

  static async open(dial: GuestDialer, version = FORKD_GUEST_PROTOCOL, deadlineMs = GUEST_DEADLINE_MS): Promise<GuestConnection> {
    const conn = new GuestConnection(dial);
    const s = conn.#socket;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        s.destroy();
        reject(timedOut('accept the connection', deadlineMs));
      }, deadlineMs);
      s.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      s.once('error', (err) => {
        clearTimeout(timer);
        reject(new ForkdError('UNAVAILABLE', `guest agent unreachable: ${err.message}`, undefined, { cause: err }));
      });
    });
    conn.version = version;
    conn.deadlineMs = deadlineMs;
    conn.send(T.HELLO, [[K.VERSION, version]]);
    return conn;
  }

  /** Reads the HELLO_OK that answers our HELLO. */
  async handshake(): Promise<void> {
    const f = await this.expect(T.HELLO_OK);
    const t = new Tlv(f.payload);
    const v = t.reqInt(K.VERSION);
    if (v !== this.version || v < FORKD_GUEST_PROTOCOL_MIN) throw new ForkdError('FAILED_PRECONDITION', 'guest agent speaks another protocol version');
    this.agent = t.str(K.AGENT) ?? '';
  }

  send(type: number, fields: TlvInput = []): boolean {
    return this.sendRaw(type, encodeTlv(fields));
  }

  sendRaw(type: number, payload: Buffer): boolean {
    if (this.closed) throw new ForkdError('UNAVAILABLE', 'guest connection closed');
    return this.#socket.write(encodeFrame(type, payload));
  }

  /**
   * `payload` as frames of at most MAX_DATA bytes, handed to the socket in
   * one writev: per frame, the stream's bookkeeping and a system call cost
   * more than the bytes (an upload of 100 MB went from ~110 to ~70 ms, and
   * the daemon's CPU from ~90 to ~40 ms). `shared`: the frames point into
   * `payload`, which the caller leaves unchanged until the connection is done
   * with it; otherwise each is a copy.
   */
  sendFrames(type: number, payload: Buffer, shared: boolean): boolean {
    if (this.closed) throw new ForkdError('UNAVAILABLE', 'guest connection closed');
    this.#socket.cork();
    for (let off = 0; off < payload.length; off += MAX_DATA) {
      const part = payload.subarray(off, off + MAX_DATA);
      if (shared) this.#socket.write(frameHeader(type, part.length));
      this.#socket.write(shared ? part : encodeFrame(type, part));
    }
    this.#socket.uncork();
    return !this.#socket.writableNeedDrain;
  }

  /**
   * Resolves when the socket can take more (back-pressure for uploads). With
   * `deadlineMs`, a guest that takes nothing for that long fails the
   * connection with TIMEOUT (a file upload; a process's stdin has none: the
   * process decides when it reads).
   */
  drained(deadlineMs?: number): Promise<void> {
    if (!this.#socket.writableNeedDrain) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = deadlineMs === undefined ? undefined : setTimeout(() => this.#fail(timedOut('take more data', deadlineMs)), deadlineMs);
      const done = () => {
        clearTimeout(timer);
        this.#socket.off('drain', done);
        this.#socket.off('close', done);
        resolve();
      };
      this.#socket.on('drain', done);
      this.#socket.on('close', done);
    });
  }

  /**
   * Next frame, or null once the guest closed the connection. With
   * `deadlineMs`, no frame for that long closes the connection and fails
   * with TIMEOUT (process and watch streams wait without one: they may be
   * quiet for hours).
   */
  next(deadlineMs?: number): Promise<Frame | null> {
    const f = this.#queue.shift();
    if (f) {
      if (this.#queue.length < 16) this.#socket.resume();
      return Promise.resolve(f);
    }
    if (this.#error) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve(null);
    return new Promise((resolve, reject) => {
      if (deadlineMs === undefined) {
        this.#waiter = { resolve, reject };
        return;
      }
      const timer = setTimeout(() => this.#fail(timedOut('answer', deadlineMs)), deadlineMs);
      this.#waiter = {
        resolve: (v) => (clearTimeout(timer), resolve(v)),
        reject: (e) => (clearTimeout(timer), reject(e)),
      };
    });
  }

  /** Next frame within the deadline, which must be `type` (an ERROR frame is thrown as ForkdError). */
  async expect(type: number, deadlineMs = this.deadlineMs): Promise<Frame> {
    const f = await this.next(deadlineMs);
    if (!f) throw new ForkdError('UNAVAILABLE', 'guest agent closed the connection');
    if (f.type === T.ERROR) throw guestError(new Tlv(f.payload));
    if (f.type !== type) throw new ProtocolError(`expected frame 0x${type.toString(16)}, got 0x${f.type.toString(16)}`);
    return f;
  }

  /**
   * Half-closes: the agent closes its end when it reads the EOF, and only
   * then is the socket gone ('close'). A snapshot waits for that (see
   * GuestClient.quiesce): an end the agent still holds would fail CRIU's
   * dump. Destroyed after a second whatever happens.
   */
  close(): void {
    if (this.#socket.destroyed || this.#socket.writableEnded) return;
    this.#socket.end();
    const t = setTimeout(() => this.#socket.destroy(), 1000);
    t.unref();
    this.#socket.once('close', () => clearTimeout(t));
    // Nobody reads any more: let what is in flight flow so the agent's EOF arrives.
    this.#queue = [];
    this.#socket.resume();
  }

  /** Sends a last frame, then closes once it is written (destroy would drop it). */
  closeWith(type: number, fields: TlvInput = []): void {
    if (this.#socket.destroyed) return;
    this.#socket.end(encodeFrame(type, encodeTlv(fields)));
    setTimeout(() => this.#socket.destroy(), 1000).unref();
  }

  /** Resolves once the socket is gone, or after `ms`. */
  closedWithin(ms: number): Promise<void> {
    if (this.#socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.#socket.once('close', () => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  get closed(): boolean {
    return this.#socket.destroyed || this.#socket.writableEnded;
  }

  #wake(): void {
    const w = this.#waiter;
    if (!w) return;
    if (this.#queue.length) {
      this.#waiter = undefined;
      w.resolve(this.#queue.shift()!);
    } else if (this.#error) {
      this.#waiter = undefined;
      w.reject(this.#error);
    } else if (this.#ended) {
      this.#waiter = undefined;
      w.resolve(null);
    }
  }

  #fail(err: Error): void {
    this.#error = err instanceof ProtocolError ? new ForkdError('INTERNAL', `guest protocol violation: ${err.message}`) : err;
    this.#socket.destroy();
    this.#wake();
  }
}
