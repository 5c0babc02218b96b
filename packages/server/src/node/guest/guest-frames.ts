/**
 * Framing and TLV codec of the guest protocol (docs/guest-protocol.md).
 * Everything decoded here comes from inside a sandbox and is untrusted: every
 * length is bounds-checked and any violation throws a ProtocolError.
 */
/** Spoken by this host; agents in older snapshots may speak down to FORKD_GUEST_PROTOCOL_MIN. */
export const FORKD_GUEST_PROTOCOL = 3;
export const FORKD_GUEST_PROTOCOL_MIN = 1;
export const MAX_FRAME = 1024 * 1024 + 64;
export const MAX_DATA = 64 * 1024;

export const T = {
  HELLO: 0x01,
  HELLO_OK: 0x02,
  OK: 0x03,
  ERROR: 0x04,
  SPAWN: 0x10,
  ATTACH: 0x11,
  LIST_PROCS: 0x12,
  KILL: 0x13,
  INFO: 0x14,
  WRITE_STDIN: 0x15,
  DUMPABLE: 0x16,
  STDIN: 0x20,
  STDIN_EOF: 0x21,
  SIGNAL: 0x22,
  RESIZE: 0x23,
  ACK: 0x24,
  DETACH: 0x25,
  READ_FILE: 0x30,
  WRITE_FILE: 0x31,
  LIST_DIR: 0x32,
  STAT: 0x33,
  MKDIR: 0x34,
  MOVE: 0x35,
  REMOVE: 0x36,
  WATCH: 0x37,
  DATA: 0x40,
  END: 0x41,
  STARTED: 0x50,
  STDOUT: 0x51,
  STDERR: 0x52,
  EXIT: 0x53,
  DROPPED: 0x54,
  PROC: 0x55,
  ENTRY: 0x56,
  EVENT: 0x57,
  DETACHED: 0x58,
} as const;

export const K = {
  VERSION: 1,
  AGENT: 2,
  ARG: 3,
  ENV: 4,
  CWD: 5,
  USER: 6,
  TAG: 7,
  PTY: 8,
  COLS: 9,
  ROWS: 10,
  PID: 11,
  SIGNAL: 12,
  EXIT_CODE: 13,
  PATH: 14,
  DST: 15,
  DEPTH: 16,
  RECURSIVE: 17,
  SIZE: 18,
  MODE: 19,
  MTIME: 20,
  TYPE: 21,
  NAME: 22,
  LINK: 23,
  CODE: 24,
  MESSAGE: 25,
  EVENT: 26,
  PROC: 27,
  RUNNING: 28,
  STDIN: 29,
  APPEND: 30,
  UID: 31,
  GID: 32,
  DROPPED: 33,
  ENTRIES: 34,
  DATA: 35,
  EOF: 36,
  OFFSET: 37,
  TOKEN: 38,
  DUMPABLE: 39,
  XATTR: 40,
  XATTR_REPLACE: 41,
} as const;

export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

export type TlvValue = string | number | boolean | Buffer;
export type TlvInput = ReadonlyArray<readonly [key: number, value: TlvValue | undefined]>;

export function encodeTlv(fields: TlvInput): Buffer {
  const parts: Buffer[] = [];
  for (const [key, value] of fields) {
    if (value === undefined) continue;
    let v: Buffer;
    if (typeof value === 'string') {
      if (value.includes('\0')) throw new ProtocolError('string field contains NUL');
      v = Buffer.from(value, 'utf8');
    } else if (typeof value === 'number' || typeof value === 'boolean') {
      v = Buffer.alloc(8);
      v.writeBigInt64BE(BigInt(typeof value === 'boolean' ? Number(value) : Math.trunc(value)));
    } else {
      v = value;
    }
    const h = Buffer.alloc(5);
    h.writeUInt8(key, 0);
    h.writeUInt32BE(v.length, 1);
    parts.push(h, v);
  }
  return Buffer.concat(parts);
}

export function encodeFrame(type: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  return Buffer.concat([frameHeader(type, payload.length), payload]);
}

/** The 5 bytes before a frame's payload of `length` bytes. */
export function frameHeader(type: number, length: number): Buffer {
  if (length + 1 > MAX_FRAME) throw new ProtocolError('frame too large');
  const h = Buffer.alloc(5);
  h.writeUInt32BE(length + 1, 0);
  h.writeUInt8(type, 4);
  return h;
}

/** A decoded TLV list with typed, validating accessors. */
export class Tlv {
  readonly #fields: Array<[number, Buffer]>;

  constructor(payload: Buffer) {
    const fields: Array<[number, Buffer]> = [];
    let off = 0;
    while (off < payload.length) {
      if (payload.length - off < 5) throw new ProtocolError('truncated TLV header');
      const key = payload.readUInt8(off);
      const len = payload.readUInt32BE(off + 1);
      off += 5;
      if (len > payload.length - off) throw new ProtocolError('TLV length exceeds payload');
      fields.push([key, payload.subarray(off, off + len)]);
      off += len;
    }
    this.#fields = fields;
  }

  has(key: number): boolean {
    return this.#fields.some(([k]) => k === key);
  }

  #raw(key: number): Buffer | undefined {
    return this.#fields.find(([k]) => k === key)?.[1];
  }

  int(key: number): number | undefined {
    const v = this.#raw(key);
    if (v === undefined) return undefined;
    if (v.length !== 8) throw new ProtocolError(`int field ${key} has length ${v.length}`);
    const n = v.readBigInt64BE();
    if (n > BigInt(Number.MAX_SAFE_INTEGER) || n < BigInt(Number.MIN_SAFE_INTEGER)) throw new ProtocolError(`int field ${key} out of range`);
    return Number(n);
  }

  reqInt(key: number): number {
    const v = this.int(key);
    if (v === undefined) throw new ProtocolError(`missing int field ${key}`);
    return v;
  }

  str(key: number): string | undefined {
    const v = this.#raw(key);
    return v === undefined ? undefined : decodeStr(v, key);
  }

  reqStr(key: number): string {
    const v = this.str(key);
    if (v === undefined) throw new ProtocolError(`missing string field ${key}`);
    return v;
  }

  strs(key: number): string[] {
    return this.#fields.filter(([k]) => k === key).map(([, v]) => decodeStr(v, key));
  }

  /** Every value of a repeated key, undecoded. */
  raws(key: number): Buffer[] {
    return this.#fields.filter(([k]) => k === key).map(([, v]) => v);
  }

  nested(key: number): Tlv[] {
    return this.#fields.filter(([k]) => k === key).map(([, v]) => new Tlv(v));
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: false });

function decodeStr(v: Buffer, key: number): string {
  if (v.length > 64 * 1024) throw new ProtocolError(`string field ${key} too long`);
  if (v.includes(0)) throw new ProtocolError(`string field ${key} contains NUL`);
  return utf8.decode(v);
}

export interface Frame {
  type: number;
  payload: Buffer;
}

/**
 * Incremental frame splitter: push socket chunks, take whole frames. Holds at
 * most one frame's worth of bytes, so a hostile guest cannot grow host memory
 * (nothing is allocated from a length it declares, only from bytes it sent).
 * A frame within one chunk is a view of it; one cut across chunks is copied
 * once, when its last byte arrives. Gluing the chunks together and cutting
 * the frame off the result instead copied every byte twice, and each 64 KiB
 * frame of a download held a 128 KiB buffer: the daemon's CPU and fresh
 * pages for a 100 MB download halved with this. A `transient` chunk (a read
 * buffer used again for the next read) is never kept: what is taken from it
 * is copied.
 */
export class FrameReader {
  /** Parts of the frame being assembled (its length prefix included). */
  #parts: Buffer[] = [];
  #size = 0;
  /** 4 + the length the prefix declared, once the prefix is whole; 0 before. */
  #need = 0;

  push(chunk: Buffer, transient = false): Frame[] {
    const out: Frame[] = [];
    let off = 0;
    while (off < chunk.length) {
      if (this.#size === 0) {
        off = this.#whole(chunk, off, out, transient);
        if (off >= chunk.length) break;
      }
      const take = this.#need ? Math.min(this.#need - this.#size, chunk.length - off) : Math.min(4 - this.#size, chunk.length - off);
      const part = chunk.subarray(off, off + take);
      this.#parts.push(transient ? Buffer.from(part) : part);
      this.#size += take;
      off += take;
      if (!this.#need && this.#size === 4) this.#need = 4 + frameLength(Buffer.concat(this.#parts, 4), 0);
      if (this.#need && this.#size === this.#need) {
        out.push(toFrame(Buffer.concat(this.#parts, this.#need)));
        this.#parts = [];
        this.#size = 0;
        this.#need = 0;
      }
    }
    return out;
  }

  /** Takes the frames that lie whole in `chunk` from `off` on (views, or copies); returns where the rest starts. */
  #whole(chunk: Buffer, off: number, out: Frame[], copy: boolean): number {
    while (chunk.length - off >= 4) {
      const end = off + 4 + frameLength(chunk, off);
      if (end > chunk.length) break;
      const frame = chunk.subarray(off, end);
      out.push(toFrame(copy ? Buffer.from(frame) : frame));
      off = end;
    }
    return off;
  }
}

function frameLength(buf: Buffer, off: number): number {
  const len = buf.readUInt32BE(off);
  if (len < 1 || len > MAX_FRAME) throw new ProtocolError(`bad frame length ${len}`);
  return len;
}

function toFrame(buf: Buffer): Frame {
  return { type: buf.readUInt8(4), payload: buf.subarray(5) };
}
