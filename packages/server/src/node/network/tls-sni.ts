/**
 * The server name of a TLS ClientHello (RFC 8446 4.1.2, RFC 6066 3), read
 * from the first bytes of a connection without consuming them (the proxy
 * forwards the same bytes). `need`: more bytes are needed; `none`: a
 * complete hello without a name (or not TLS at all, or a malformed one).
 * The bytes come from a sandbox: every read is bounds-checked and no input
 * throws.
 */
export type NameResult = { kind: 'name'; name: string } | { kind: 'need' } | { kind: 'none' };
export type SniResult = NameResult;

const NEED: SniResult = { kind: 'need' };
const NONE: SniResult = { kind: 'none' };
const HANDSHAKE = 0x16;
const CLIENT_HELLO = 0x01;
/** A record's fragment is at most 2^14 bytes (plus 256 of expansion a server would refuse anyway). */
const MAX_RECORD = (1 << 14) + 256;
/** A hello longer than this (no real one is) is not waited for. */
const MAX_HELLO = 64 * 1024;

export function readSni(b: Buffer): SniResult {
  if (b.length === 0) return NEED;
  if (b[0] !== HANDSHAKE) return NONE;
  const got = handshakeBytes(b);
  if (got === 'none') return NONE;
  const { hs, open } = got;
  if (hs.length < 4) return open ? NEED : NONE;
  if (hs[0] !== CLIENT_HELLO) return NONE;
  const hsLen = (hs[1]! << 16) | (hs[2]! << 8) | hs[3]!;
  if (hsLen > MAX_HELLO) return NONE;
  // Reads stop at whichever comes first: the bytes that arrived (more may come: `need`) or the hello's
  // declared end (nothing more will: `none`).
  const complete = hs.length >= 4 + hsLen || !open;
  return helloSni(new Cursor(hs.subarray(4, 4 + hsLen)), complete);
}

/**
 * The handshake bytes of the consecutive handshake records that arrived (a
 * hello may be split over several: post-quantum key shares do it), the last
 * one possibly partial; 'none' when the first record header is not a TLS
 * one. `open`: more bytes could still add to them (a record not whole, or
 * nothing after the last one yet); anything else after them is not the
 * hello's.
 */
function handshakeBytes(b: Buffer): { hs: Buffer; open: boolean } | 'none' {
  const parts: Buffer[] = [];
  let off = 0;
  let open = true;
  while (off < b.length) {
    if (b[off] !== HANDSHAKE) {
      open = false;
      break;
    }
    if (b.length - off < 5) break;
    const len = b.readUInt16BE(off + 3);
    if (b[off + 1] !== 0x03 || len === 0 || len > MAX_RECORD) {
      open = false;
      break;
    }
    parts.push(b.subarray(off + 5, Math.min(b.length, off + 5 + len)));
    off += 5 + len;
  }
  if (parts.length === 0 && !open) return 'none';
  return { hs: parts.length === 1 ? parts[0]! : Buffer.concat(parts), open };
}

/** Reads within `buf`; every read says whether it fit. */
class Cursor {
  off = 0;
  constructor(readonly buf: Buffer) {}

  has(n: number): boolean {
    return n >= 0 && this.off + n <= this.buf.length;
  }
  u8(): number | undefined {
    return this.has(1) ? this.buf[this.off++] : undefined;
  }
  u16(): number | undefined {
    if (!this.has(2)) return undefined;
    const v = this.buf.readUInt16BE(this.off);
    this.off += 2;
    return v;
  }
  skip(n: number | undefined): boolean {
    if (n === undefined || !this.has(n)) return false;
    this.off += n;
    return true;
  }
}

/** The SNI of a ClientHello body; running out of bytes is `need` unless the hello is `complete`. */
function helloSni(c: Cursor, complete: boolean): SniResult {
  const short = complete ? NONE : NEED;
  // legacy_version, random, legacy_session_id, cipher_suites, legacy_compression_methods.
  if (!c.skip(2 + 32) || !c.skip(c.u8()) || !c.skip(c.u16()) || !c.skip(c.u8())) return short;
  const extLen = c.u16();
  if (extLen === undefined) return short;
  const extEnd = c.off + extLen;
  while (c.off + 4 <= Math.min(extEnd, c.buf.length)) {
    const type = c.u16()!;
    const len = c.u16()!;
    if (type === 0) return serverName(c, len, short);
    if (!c.skip(len)) return short;
  }
  return c.off >= extEnd ? NONE : short;
}

/** server_name extension (RFC 6066 3): a list whose first entry must be a host_name (type 0). */
function serverName(c: Cursor, len: number, short: SniResult): SniResult {
  if (!c.has(Math.min(len, 5))) return short;
  if (len < 5) return NONE;
  c.u16(); // server_name_list length
  if (c.u8() !== 0) return NONE;
  const nlen = c.u16()!;
  if (nlen > len - 5) return NONE;
  if (!c.has(nlen)) return short;
  return hostName(c.buf.toString('latin1', c.off, c.off + nlen));
}

/** A destination name as the proxy checks it (lower-case, no trailing dot), or `none` for anything else. */
export function hostName(raw: string): NameResult {
  const name = raw.toLowerCase().replace(/\.$/, '');
  // What a DNS query can carry: labels of 1 to 63 bytes, 253 in all.
  return /^[a-z0-9_.-]{1,253}$/.test(name) && name.split('.').every((l) => l.length >= 1 && l.length <= 63) ? { kind: 'name', name } : NONE;
}
