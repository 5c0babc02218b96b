/**
 * The few DNS message facts forkd's resolver needs (RFC 1035): a query's
 * question, an answer's A records, and an error reply to a query (the
 * replies forkd rebuilds from an upstream's answer: dns-answer.ts).
 */
export const TYPE = { A: 1, NS: 2, CNAME: 5, SOA: 6, NULL: 10, PTR: 12, MX: 15, TXT: 16, AAAA: 28, SRV: 33, SVCB: 64, HTTPS: 65, ANY: 255, CAA: 257 } as const;
export const RCODE = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, NOTIMP: 4, REFUSED: 5 } as const;
export const CLASS_IN = 1;

export interface DnsQuestion {
  id: number;
  /** Lower-case, no trailing dot. */
  name: string;
  type: number;
  /** Offset just past the question (header + QNAME + QTYPE + QCLASS). */
  end: number;
}

export interface DnsAddresses {
  rcode: number;
  /** Every A record of the answer section (a CNAME chain's end included), with its TTL in seconds. */
  a: Array<{ addr: string; ttl: number }>;
}

/**
 * A name at `off` (labels, or a compression pointer unless `pointers` is
 * false); throws on a malformed or looping one.
 */
export function readName(b: Buffer, off: number, pointers = true): { name: string; end: number } {
  const labels: string[] = [];
  let end = -1;
  for (let hops = 0; hops < 64; hops++) {
    const len = b[off];
    if (len === undefined) throw new Error('truncated name');
    if (len === 0) return { name: labels.join('.').toLowerCase(), end: end < 0 ? off + 1 : end };
    if ((len & 0xc0) === 0xc0) {
      if (!pointers) throw new Error('compressed name');
      const lo = b[off + 1];
      if (lo === undefined) throw new Error('truncated pointer');
      if (end < 0) end = off + 2;
      off = ((len & 0x3f) << 8) | lo;
      continue;
    }
    if (len > 63 || off + 1 + len > b.length) throw new Error('bad label');
    labels.push(b.toString('latin1', off + 1, off + 1 + len));
    off += 1 + len;
  }
  throw new Error('name too long');
}

/** The single question of a standard query, or undefined when `b` is not one. */
export function parseQuestion(b: Buffer): DnsQuestion | undefined {
  try {
    if (b.length < 12 || (b[2]! & 0x80) !== 0 || b.readUInt16BE(4) !== 1) return undefined;
    // Nothing precedes a query's only name for it to point at: a pointer there points forward, past what a reply echoes.
    const { name, end } = readName(b, 12, false);
    if (end + 4 > b.length) return undefined;
    return { id: b.readUInt16BE(0), name, type: b.readUInt16BE(end), end: end + 4 };
  } catch {
    return undefined;
  }
}

/** A reply to `query` with `rcode` and no records (its question echoed). */
export function errorReply(query: Buffer, q: DnsQuestion, rcode: number): Buffer {
  const r = Buffer.from(query.subarray(0, q.end));
  // QR, the query's opcode and RD; RA; the code.
  r[2] = 0x80 | (r[2]! & 0x79);
  r[3] = 0x80 | (rcode & 0x0f);
  r.writeUInt16BE(1, 4);
  r.writeUInt32BE(0, 6);
  r.writeUInt16BE(0, 10);
  return r;
}

/**
 * forkd's recursive query for `name`'s records of `type` (class IN, RD,
 * nothing else); undefined for a name no query can carry (a label empty or
 * over 63 bytes, over 253 in all, a character past U+00FF): its length byte
 * would be read as another label or a pointer.
 */
export function dnsQuery(id: number, name: string, type: number = TYPE.A): Buffer | undefined {
  const parts = name.replace(/\.$/, '').split('.');
  if (name.length > 254 || /[^\x00-\xff]/.test(name) || parts.some((l) => l.length < 1 || l.length > 63)) return undefined;
  const labels = parts.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')]));
  const h = Buffer.alloc(12);
  h.writeUInt16BE(id & 0xffff, 0);
  h[2] = 0x01;
  h.writeUInt16BE(1, 4);
  const t = Buffer.alloc(5);
  t.writeUInt16BE(type, 1);
  t.writeUInt16BE(CLASS_IN, 3);
  return Buffer.concat([h, ...labels, t]);
}

/** The answer's code and A records; undefined when `b` is not a response. */
export function parseAddresses(b: Buffer): DnsAddresses | undefined {
  try {
    if (b.length < 12 || (b[2]! & 0x80) === 0) return undefined;
    const qd = b.readUInt16BE(4);
    const an = b.readUInt16BE(6);
    let off = 12;
    for (let i = 0; i < qd; i++) off = readName(b, off).end + 4;
    const a: DnsAddresses['a'] = [];
    for (let i = 0; i < an; i++) {
      off = readName(b, off).end;
      if (off + 10 > b.length) break;
      const type = b.readUInt16BE(off);
      const ttl = b.readUInt32BE(off + 4);
      const len = b.readUInt16BE(off + 8);
      off += 10;
      if (off + len > b.length) break;
      if (type === TYPE.A && len === 4) a.push({ addr: `${b[off]}.${b[off + 1]}.${b[off + 2]}.${b[off + 3]}`, ttl });
      off += len;
    }
    return { rcode: b[3]! & 0x0f, a };
  } catch {
    return undefined;
  }
}
