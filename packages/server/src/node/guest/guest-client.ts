import { ForkdError, type FileEntry, type ProcessInfo, type WatchEvent } from '@forkd/protocol';
import { GUEST_DEADLINE_MS, GuestConnection, guestError, type GuestDialer } from './guest-connection.js';
import { FORKD_GUEST_PROTOCOL, FORKD_GUEST_PROTOCOL_MIN, K, MAX_DATA, ProtocolError, T, Tlv, type TlvInput } from './guest-frames.js';
import { decodeXattrs, metadataBytes, XATTR_PROTOCOL, xattrFields } from './guest-xattrs.js';
import { GuestProcess, type OutputHandlers } from './guest-process.js';
import { SealGate } from './seal-gate.js';

export { GuestProcess, type DetachReason, type OutputHandlers, type ProcessExit } from './guest-process.js';

// The contract's types: a remote node's client speaks them too (node-contract/node-types.ts).
import type { SpawnOptions, ProcessSelector, ResumePoint, WriteFileOptions } from '../../node-contract/node-types.js';
/** ResumePoint: where a re-attach resumes a stream (protocol 2): that very process, from that ring offset. */
export type { SpawnOptions, ProcessSelector, ResumePoint, WriteFileOptions };

/** How long a snapshot waits for short requests (file transfers, listings) to finish before it cuts them. */
const REQUEST_DRAIN_MS = 1000;
/** An upload goes to the socket 16 frames (1 MiB) at a time (see GuestConnection.sendFrames). */
const UPLOAD_BATCH = 16 * MAX_DATA;

function selectorFields(sel: ProcessSelector): TlvInput {
  return 'pid' in sel ? [[K.PID, sel.pid]] : [[K.TAG, sel.tag]];
}

function toEntry(t: Tlv, base: string): FileEntry {
  const name = t.reqStr(K.NAME);
  const type = t.reqStr(K.TYPE);
  if (type !== 'file' && type !== 'dir' && type !== 'symlink' && type !== 'other') throw new ProtocolError(`bad entry type ${type}`);
  const link = t.str(K.LINK);
  const metadata = decodeXattrs(t.raws(K.XATTR));
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
    ...(metadata ? { metadata } : {}),
  };
}

function tooOld(): ForkdError {
  return new ForkdError('FAILED_PRECONDITION', "this sandbox's guest agent (restored from an older snapshot) cannot store file metadata", { minProtocol: XATTR_PROTOCOL });
}

function joinPath(base: string, rel: string): string {
  return base.endsWith('/') ? base + rel : `${base}/${rel}`;
}

/** What one directory listing may hold: it is answered as one JSON reply. */
export const MAX_LIST_ENTRIES = 100_000;
/** ~Bytes of that reply (names, paths, link targets, metadata, ~100 per entry for the rest). */
export const MAX_LIST_BYTES = 32 * 1024 * 1024;

const WATCH_EVENTS = new Set(['create', 'write', 'remove', 'rename', 'chmod']);

/**
 * The host side of the guest protocol. Stateless: every call opens its own
 * connection, so nothing host-side stays connected to a sandbox between calls
 * (which is what lets CRIU dump it at any time).
 */
export class GuestClient {
  readonly #dial: GuestDialer;
  readonly #open = new Set<GuestConnection>();
  #gate: Promise<void> | undefined;
  /** Lowered, a version at a time, to an agent of an older snapshot that refuses ours. */
  #version: number | undefined;
  /** Every connect, HELLO, answer and transfer step gets this long (see GUEST_DEADLINE_MS). */
  readonly #deadlineMs: number;
  /** Nothing connects while the agent's directory is not known sealed (see SealGate). */
  readonly #seal: SealGate;

  /**
   * `dial` opens a connection to the agent (see GuestDialer). `verify`
   * rejects unless the socket's directory is a real directory that is sealed
   * (immutable) with a socket in it; without one (an agent outside any
   * sandbox, in tests) the channel is trusted as it is.
   */
  constructor(dial: GuestDialer, opts: { verify?: () => Promise<void>; deadlineMs?: number } = {}) {
    this.#dial = dial;
    this.#deadlineMs = opts.deadlineMs ?? GUEST_DEADLINE_MS;
    this.#seal = new SealGate(opts.verify);
  }

  /** forkd is about to unseal the socket's directory: new connections wait until `sealed` (or `sealFailed`). */
  unsealing(): void {
    this.#seal.unsealing();
  }

  /** The directory was sealed and checked (forkd-rootfs-ops seal-agent). */
  sealed(): void {
    this.#seal.sealed();
  }

  /** Sealing failed (the directory was tampered with, or the start failed): waiting connections fail with `err`. */
  sealFailed(err: unknown): void {
    this.#seal.sealFailed(err);
  }

  async #connect(deadlineMs = this.#deadlineMs): Promise<GuestConnection> {
    while (this.#gate) await this.#gate;
    await this.#seal.ready();
    const conn = await GuestConnection.open(this.#dial, this.#version, deadlineMs);
    this.#open.add(conn);
    conn.onClose(() => this.#open.delete(conn));
    return conn;
  }

  /** Connections open right now (an attached stream counts as activity). */
  get openConnections(): number {
    return this.#open.size;
  }

  /** Cuts every connection at once (the instance is going away). */
  detachAll(): number {
    const n = this.#open.size;
    for (const c of this.#open) c.close();
    this.#open.clear();
    return n;
  }

  /**
   * Holds new connections back (they wait, they do not fail) and lets go of
   * the open ones, until the returned release is called: the window in which
   * a snapshot or restore runs. CRIU cannot dump a socket whose peer is
   * outside the sandbox. Process streams detach with the guest's
   * confirmation (so stdin in flight is accounted for and output is kept for
   * the re-attach), watches are dropped (their owners re-open them), and
   * short requests get a moment to finish.
   */
  async quiesce(): Promise<() => void> {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    this.#gate = gate;
    const open = [...this.#open];
    await Promise.all(open.map((c) => (c.onQuiesce ? c.onQuiesce() : c.closedWithin(REQUEST_DRAIN_MS))));
    for (const c of open) c.close();
    // Gone only once the agent has closed its end too: CRIU cannot dump one it still holds.
    await Promise.all(open.map((c) => c.closedWithin(1000)));
    return () => {
      if (this.#gate === gate) this.#gate = undefined;
      release();
    };
  }

  /**
   * `minVersion`: the request means something only to an agent at least
   * that new (an older one ignores keys it does not know); refused rather
   * than silently half-done.
   */
  async #request(type: number, fields: TlvInput, deadlineMs?: number, minVersion = FORKD_GUEST_PROTOCOL_MIN): Promise<GuestConnection> {
    if ((this.#version ?? FORKD_GUEST_PROTOCOL) < minVersion) throw tooOld();
    const conn = await this.#connect(deadlineMs);
    try {
      conn.send(type, fields);
      await conn.handshake();
      return conn;
    } catch (err) {
      conn.close();
      const v = this.#version ?? FORKD_GUEST_PROTOCOL;
      if (err instanceof ForkdError && err.details?.errno === 'EPROTO' && v > FORKD_GUEST_PROTOCOL_MIN) {
        // An agent restored from an older snapshot: speak its version (v1: its streams do not
        // resume; below 3: no file metadata).
        this.#version = v - 1;
        return this.#request(type, fields, deadlineMs, minVersion);
      }
      throw err;
    }
  }

  async #simple(type: number, fields: TlvInput, deadlineMs?: number): Promise<Tlv> {
    const conn = await this.#request(type, fields, deadlineMs);
    try {
      return new Tlv((await conn.expect(T.OK)).payload);
    } finally {
      conn.close();
    }
  }

  /** The protocol this agent speaks, as far as the host has learnt (its newest until an agent refused it). */
  get protocol(): number {
    return this.#version ?? FORKD_GUEST_PROTOCOL;
  }

  /** `deadlineMs`: shorter than the client's for a liveness probe (see SandboxManager#waitReady). */
  async info(deadlineMs?: number): Promise<{ version: number; agent: string; pid: number; rssBytes: number; processes: number }> {
    const t = await this.#simple(T.INFO, [], deadlineMs);
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

  /** With `resume`, only the process that carries that token, from that offset (see ResumePoint). */
  async attach(sel: ProcessSelector, handlers: OutputHandlers = {}, resume?: ResumePoint): Promise<GuestProcess> {
    const conn = await this.#request(T.ATTACH, [...selectorFields(sel), [K.TOKEN, resume?.token], [K.OFFSET, resume?.offset]]);
    return this.#started(conn, handlers, resume?.offset);
  }

  async #started(conn: GuestConnection, handlers: OutputHandlers, expectOffset?: number): Promise<GuestProcess> {
    try {
      const f = await conn.expect(T.STARTED);
      return new GuestProcess(conn, new Tlv(f.payload), handlers, expectOffset);
    } catch (err) {
      conn.close();
      throw err;
    }
  }

  /**
   * The agent is not dumpable except while the host dumps it (see the
   * agent's handle_dumpable): CRIU checks a restored sandbox's namespaces
   * from inside its user namespace, which a non-dumpable task's refuse.
   */
  async setDumpable(on: boolean): Promise<void> {
    await this.#simple(T.DUMPABLE, [[K.DUMPABLE, on]]);
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
        const f = await conn.next(conn.deadlineMs);
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
          const f = await conn.next(conn.deadlineMs);
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

  async writeFile(path: string, data: AsyncIterable<Uint8Array> | Uint8Array, opts: WriteFileOptions = {}): Promise<number> {
    const meta = opts.metadata ? xattrFields(opts.metadata, opts.metadataScope) : [];
    const conn = await this.#request(
      T.WRITE_FILE,
      [[K.PATH, path], [K.MODE, opts.mode], [K.APPEND, opts.append], [K.USER, opts.user], ...meta],
      undefined,
      // An older agent ignores the keys: fine for an empty set (it reports no metadata either), not for pairs.
      opts.metadata && Object.keys(opts.metadata).length ? XATTR_PROTOCOL : FORKD_GUEST_PROTOCOL_MIN,
    );
    try {
      await conn.expect(T.OK);
      // A whole buffer is the caller's until this resolves: its frames point into it. A stream's chunks are
      // copied, as its source may refill the memory of one it yielded.
      const whole = data instanceof Uint8Array;
      for await (const chunk of whole ? [data] : data) {
        const buf = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
        for (let off = 0; off < buf.length; off += UPLOAD_BATCH) {
          if (!conn.sendFrames(T.DATA, buf.subarray(off, off + UPLOAD_BATCH), whole)) await conn.drained(conn.deadlineMs);
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
    // One JSON reply is built from it: refused past a cap (entries and bytes) long before
    // the daemon would hold a million entries and their JSON at once.
    let entries = 0;
    let bytes = 0;
    const what = `the listing of ${path} (depth ${depth})`;
    return this.#collect(conn, T.ENTRY, MAX_LIST_ENTRIES + 1, (t) => {
      const e = toEntry(t, path);
      bytes += e.path.length + e.name.length + (e.linkTarget?.length ?? 0) + metadataBytes(e.metadata) + 100;
      if (++entries > MAX_LIST_ENTRIES) throw new ForkdError('RESOURCE_EXHAUSTED', `${what} has more than ${MAX_LIST_ENTRIES} entries (the cap); list a narrower path or depth`, { limitEntries: MAX_LIST_ENTRIES });
      if (bytes > MAX_LIST_BYTES) throw new ForkdError('RESOURCE_EXHAUSTED', `${what} is larger than ${MAX_LIST_BYTES} bytes (the cap); list a narrower path or depth`, { limitBytes: MAX_LIST_BYTES });
      return e;
    });
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

  /** Watches a directory until `close()` is called on the result; `done` says why it ended. */
  async watch(path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<{ close(): void; done: Promise<'quiesce' | 'lost' | 'client'> }> {
    let closedByUs = false;
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
    let quiesced = false;
    conn.onQuiesce = async () => {
      quiesced = true;
      conn.close();
    };
    const done = (async (): Promise<'quiesce' | 'lost' | 'client'> => {
      try {
        for (;;) {
          const f = await conn.next();
          if (!f) return quiesced ? 'quiesce' : closedByUs ? 'client' : 'lost';
          if (f.type !== T.EVENT) throw new ProtocolError('unexpected frame in watch stream');
          const t = new Tlv(f.payload);
          const type = t.reqStr(K.EVENT);
          if (!WATCH_EVENTS.has(type)) throw new ProtocolError(`unknown watch event ${type}`);
          // Awaited: a watcher that does not read stops this loop; the agent then stops reading
          // inotify, whose queue overflows in the kernel, not in the daemon.
          await onEvent({ type: type as WatchEvent['type'], name: t.reqStr(K.NAME) });
        }
      } finally {
        conn.close();
      }
    })();
    done.catch(() => {});
    return {
      close: () => {
        closedByUs = true;
        conn.close();
      },
      done,
    };
  }
}
