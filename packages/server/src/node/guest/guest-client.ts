import { lstat } from 'node:fs/promises';
import { ForkdError, type FileEntry, type ProcessInfo, type WatchEvent } from '@forkd/protocol';
import { GuestConnection, guestError } from './guest-connection.js';
import { K, MAX_DATA, ProtocolError, T, Tlv, type TlvInput } from './guest-frames.js';

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
}

export interface ProcessExit {
  exitCode: number;
  signal: number;
}

/**
 * A process seen through one guest connection. Closing it detaches: the
 * process keeps running inside the sandbox and can be re-attached.
 */
export class GuestProcess {
  readonly pid: number;
  readonly tag: string | undefined;
  readonly pty: boolean;
  /** The exit, or null when the connection ended first (detach, snapshot, crash). */
  readonly done: Promise<ProcessExit | null>;
  readonly #conn: GuestConnection;

  constructor(conn: GuestConnection, started: Tlv, handlers: OutputHandlers) {
    this.#conn = conn;
    this.pid = started.reqInt(K.PID);
    this.tag = started.str(K.TAG);
    this.pty = started.int(K.PTY) === 1;
    this.done = this.#pump(handlers);
    this.done.catch(() => {});
  }

  async #pump(h: OutputHandlers): Promise<ProcessExit | null> {
    try {
      for (;;) {
        const f = await this.#conn.next();
        if (!f) return null;
        switch (f.type) {
          case T.STDOUT:
            await h.onStdout?.(f.payload);
            break;
          case T.STDERR:
            await h.onStderr?.(f.payload);
            break;
          case T.DROPPED:
            await h.onDropped?.(new Tlv(f.payload).reqInt(K.DROPPED));
            break;
          case T.EXIT: {
            const t = new Tlv(f.payload);
            return { exitCode: t.reqInt(K.EXIT_CODE), signal: t.int(K.SIGNAL) ?? 0 };
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

  detach(): void {
    this.#conn.close();
  }
}

function selectorFields(sel: ProcessSelector): TlvInput {
  return 'pid' in sel ? [[K.PID, sel.pid]] : [[K.TAG, sel.tag]];
}

function toEntry(t: Tlv, base: string): FileEntry {
  const name = t.reqStr(K.NAME);
  const type = t.reqStr(K.TYPE);
  if (type !== 'file' && type !== 'dir' && type !== 'symlink' && type !== 'other') throw new ProtocolError(`bad entry type ${type}`);
  const link = t.str(K.LINK);
  return {
    name: name.split('/').pop() ?? name,
    path: base ? joinPath(base, name) : name,
    type,
    size: t.int(K.SIZE) ?? 0,
    mode: (t.int(K.MODE) ?? 0) & 0o7777,
    mtime: new Date(t.int(K.MTIME) ?? 0).toISOString(),
    uid: t.int(K.UID) ?? 0,
    gid: t.int(K.GID) ?? 0,
    ...(link !== undefined ? { linkTarget: link } : {}),
  };
}

function joinPath(base: string, rel: string): string {
  return base.endsWith('/') ? base + rel : `${base}/${rel}`;
}

const WATCH_EVENTS = new Set(['create', 'write', 'remove', 'rename', 'chmod']);

/**
 * The host side of the guest protocol. Stateless: every call opens its own
 * connection, so nothing host-side stays connected to a sandbox between calls
 * (which is what lets CRIU dump it at any time).
 */
export class GuestClient {
  readonly #socketPath: string;
  readonly #dir: string;
  readonly #open = new Set<GuestConnection>();
  #gate: Promise<void> | undefined;

  constructor(socketPath: string) {
    this.#socketPath = socketPath;
    this.#dir = socketPath.slice(0, socketPath.lastIndexOf('/'));
  }

  /**
   * The socket lives in a directory the sandbox controls. Refuse to follow a
   * symlink planted there, so the host never connects to a host-side socket.
   */
  async #connect(): Promise<GuestConnection> {
    while (this.#gate) await this.#gate;
    const [d, s] = await Promise.all([lstat(this.#dir).catch(() => null), lstat(this.#socketPath).catch(() => null)]);
    if (!d || !s) throw new ForkdError('UNAVAILABLE', 'guest agent socket is missing');
    if (!d.isDirectory() || !s.isSocket()) throw new ForkdError('FAILED_PRECONDITION', 'guest agent socket was tampered with');
    const conn = await GuestConnection.open(this.#socketPath);
    this.#open.add(conn);
    conn.onClose(() => this.#open.delete(conn));
    return conn;
  }

  /**
   * Closes every connection to the sandbox (process streams detach, the
   * processes keep running). CRIU cannot dump a socket whose peer is outside
   * the sandbox, so this runs before every memory snapshot.
   */
  /** Connections open right now (an attached stream counts as activity). */
  get openConnections(): number {
    return this.#open.size;
  }

  detachAll(): number {
    const n = this.#open.size;
    for (const c of this.#open) c.close();
    this.#open.clear();
    return n;
  }

  /**
   * Holds new connections back (they wait, they do not fail) and detaches
   * the open ones, until the returned release is called: the window in which
   * a snapshot or restore runs.
   */
  quiesce(): () => void {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    this.#gate = gate;
    this.detachAll();
    return () => {
      if (this.#gate === gate) this.#gate = undefined;
      release();
    };
  }

  async #request(type: number, fields: TlvInput): Promise<GuestConnection> {
    const conn = await this.#connect();
    try {
      conn.send(type, fields);
      await conn.handshake();
      return conn;
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  async #simple(type: number, fields: TlvInput): Promise<Tlv> {
    const conn = await this.#request(type, fields);
    try {
      return new Tlv((await conn.expect(T.OK)).payload);
    } finally {
      conn.close();
    }
  }

  async info(): Promise<{ version: number; agent: string; pid: number; rssBytes: number; processes: number }> {
    const t = await this.#simple(T.INFO, []);
    return { version: t.reqInt(K.VERSION), agent: t.str(K.AGENT) ?? '', pid: t.int(K.PID) ?? 0, rssBytes: t.int(K.SIZE) ?? 0, processes: t.int(K.ENTRIES) ?? 0 };
  }

  async spawn(opts: SpawnOptions, handlers: OutputHandlers = {}): Promise<GuestProcess> {
    const fields: Array<readonly [number, string | number | boolean | undefined]> = [];
    for (const a of opts.argv) fields.push([K.ARG, a]);
    for (const [k, v] of Object.entries(opts.env ?? {})) fields.push([K.ENV, `${k}=${v}`]);
    fields.push([K.CWD, opts.cwd], [K.USER, opts.user], [K.TAG, opts.tag], [K.STDIN, opts.stdin ?? false]);
    if (opts.pty) fields.push([K.PTY, true], [K.COLS, opts.pty.cols], [K.ROWS, opts.pty.rows]);
    const conn = await this.#request(T.SPAWN, fields);
    return this.#started(conn, handlers);
  }

  async attach(sel: ProcessSelector, handlers: OutputHandlers = {}): Promise<GuestProcess> {
    const conn = await this.#request(T.ATTACH, selectorFields(sel));
    return this.#started(conn, handlers);
  }

  async #started(conn: GuestConnection, handlers: OutputHandlers): Promise<GuestProcess> {
    try {
      const f = await conn.expect(T.STARTED);
      return new GuestProcess(conn, new Tlv(f.payload), handlers);
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  async kill(sel: ProcessSelector, signal: number): Promise<void> {
    await this.#simple(T.KILL, [...selectorFields(sel), [K.SIGNAL, signal]]);
  }

  async writeStdin(sel: ProcessSelector, data: Buffer | undefined, eof: boolean): Promise<void> {
    if (data && data.length > 1024 * 1024 - 256) throw new ForkdError('INVALID_ARGUMENT', 'stdin chunk larger than 1 MiB', { limitBytes: 1024 * 1024 - 256 });
    await this.#simple(T.WRITE_STDIN, [...selectorFields(sel), [K.DATA, data], [K.EOF, eof]]);
  }

  /** Reads `type` frames until END; bounded, since the guest decides how many come. */
  async #collect<R>(conn: GuestConnection, type: number, max: number, map: (t: Tlv) => R): Promise<R[]> {
    const out: R[] = [];
    try {
      for (;;) {
        const f = await conn.next();
        if (!f) throw new ForkdError('UNAVAILABLE', 'guest agent closed the connection');
        if (f.type === T.END) return out;
        if (f.type === T.ERROR) throw guestError(new Tlv(f.payload));
        if (f.type !== type) throw new ProtocolError(`unexpected frame 0x${f.type.toString(16)} in a listing`);
        if (out.length >= max) throw new ForkdError('RESOURCE_EXHAUSTED', `listing longer than ${max} entries`);
        out.push(map(new Tlv(f.payload)));
      }
    } finally {
      conn.close();
    }
  }

  async listProcesses(): Promise<ProcessInfo[]> {
    const conn = await this.#request(T.LIST_PROCS, []);
    return this.#collect(conn, T.PROC, 65536, (t) => {
      const tag = t.str(K.TAG);
      const running = t.int(K.RUNNING) === 1;
      return {
        pid: t.reqInt(K.PID),
        ...(tag !== undefined ? { tag } : {}),
        cmd: t.strs(K.ARG),
        pty: t.int(K.PTY) === 1,
        running,
        ...(!running ? { exitCode: t.int(K.EXIT_CODE) ?? -1, signal: t.int(K.SIGNAL) ?? 0 } : {}),
      };
    });
  }

  /** Streams a file out of the sandbox. The first value resolves once the file is open. */
  async readFile(path: string): Promise<{ size: number; chunks: AsyncGenerator<Buffer> }> {
    const conn = await this.#request(T.READ_FILE, [[K.PATH, path]]);
    let ok;
    try {
      ok = new Tlv((await conn.expect(T.OK)).payload);
    } catch (err) {
      conn.close();
      throw err;
    }
    const size = ok.int(K.SIZE) ?? 0;
    async function* chunks(): AsyncGenerator<Buffer> {
      try {
        for (;;) {
          const f = await conn.next();
          if (!f) throw new ForkdError('UNAVAILABLE', 'guest agent closed the connection mid-file');
          if (f.type === T.END) return;
          if (f.type === T.ERROR) throw guestError(new Tlv(f.payload));
          if (f.type !== T.DATA) throw new ProtocolError('unexpected frame in file stream');
          yield f.payload;
        }
      } finally {
        conn.close();
      }
    }
    return { size, chunks: chunks() };
  }

  async writeFile(path: string, data: AsyncIterable<Uint8Array> | Uint8Array, opts: { mode?: number | undefined; append?: boolean | undefined; user?: string | undefined } = {}): Promise<number> {
    const conn = await this.#request(T.WRITE_FILE, [
      [K.PATH, path],
      [K.MODE, opts.mode],
      [K.APPEND, opts.append],
      [K.USER, opts.user],
    ]);
    try {
      await conn.expect(T.OK);
      const source = data instanceof Uint8Array ? [data] : data;
      for await (const chunk of source) {
        const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        for (let off = 0; off < buf.length; off += MAX_DATA) {
          if (!conn.sendRaw(T.DATA, buf.subarray(off, off + MAX_DATA))) await conn.drained();
        }
      }
      conn.send(T.END);
      const t = new Tlv((await conn.expect(T.OK)).payload);
      return t.int(K.SIZE) ?? 0;
    } finally {
      conn.close();
    }
  }

  async listDir(path: string, depth = 1): Promise<FileEntry[]> {
    const conn = await this.#request(T.LIST_DIR, [
      [K.PATH, path],
      [K.DEPTH, depth],
    ]);
    return this.#collect(conn, T.ENTRY, 1_000_000, (t) => toEntry(t, path));
  }

  async stat(path: string): Promise<FileEntry> {
    const conn = await this.#request(T.STAT, [[K.PATH, path]]);
    try {
      const e = toEntry(new Tlv((await conn.expect(T.ENTRY)).payload), '');
      return { ...e, path };
    } finally {
      conn.close();
    }
  }

  async mkdir(path: string, user?: string): Promise<void> {
    await this.#simple(T.MKDIR, [
      [K.PATH, path],
      [K.USER, user],
    ]);
  }

  async move(from: string, to: string): Promise<void> {
    await this.#simple(T.MOVE, [
      [K.PATH, from],
      [K.DST, to],
    ]);
  }

  async remove(path: string, recursive = false): Promise<void> {
    await this.#simple(T.REMOVE, [
      [K.PATH, path],
      [K.RECURSIVE, recursive],
    ]);
  }

  /** Watches a directory until `close()` is called on the result. */
  async watch(path: string, recursive: boolean, onEvent: (e: WatchEvent) => void): Promise<{ close(): void; done: Promise<void> }> {
    const conn = await this.#request(T.WATCH, [
      [K.PATH, path],
      [K.RECURSIVE, recursive],
    ]);
    try {
      await conn.expect(T.OK);
    } catch (err) {
      conn.close();
      throw err;
    }
    const done = (async () => {
      try {
        for (;;) {
          const f = await conn.next();
          if (!f) return;
          if (f.type !== T.EVENT) throw new ProtocolError('unexpected frame in watch stream');
          const t = new Tlv(f.payload);
          const type = t.reqStr(K.EVENT);
          if (!WATCH_EVENTS.has(type)) throw new ProtocolError(`unknown watch event ${type}`);
          onEvent({ type: type as WatchEvent['type'], name: t.reqStr(K.NAME) });
        }
      } finally {
        conn.close();
      }
    })();
    done.catch(() => {});
    return { close: () => conn.close(), done };
  }
}
