import { CLASS_IN, RCODE, readName, TYPE, type DnsQuestion } from './dns-message.js';
import { isHostName } from './dns-policy.js';

/**
 * forkd's upstream query and the reply a sandbox gets, both built by forkd:
 * the sandbox's bytes never go upstream, and the upstream's never come back
 * as sent. The reply holds the client's question and only the answer
 * records on the question's CNAME chain of the type asked (or CNAME), each
 * re-encoded from its parsed fields; no authority or additional records, no
 * EDNS, no rcode but NOERROR, NXDOMAIN or SERVFAIL.
 */
/** A UDP reply without EDNS (RFC 1035); longer ones are cut at a record and marked truncated (TC). */
export const UDP_MAX = 512;
const MAX_CHAIN = 8;

function encodeName(name: string): Buffer {
  return Buffer.concat([...name.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])), Buffer.from([0])]);
}

interface Rr {
  owner: string;
  type: number;
  cls: number;
  ttl: number;
  /** Offset and length of its data in the upstream message. */
  at: number;
  len: number;
}

/** The answer section's records; throws on a malformed message (the caller answers SERVFAIL). */
function answerRecords(b: Buffer): Rr[] {
  const an = b.readUInt16BE(6);
  let off = readName(b, 12).end + 4;
  const out: Rr[] = [];
  for (let i = 0; i < an; i++) {
    const { name, end } = readName(b, off);
    if (end + 10 > b.length) throw new Error('truncated record');
    const len = b.readUInt16BE(end + 8);
    if (end + 10 + len > b.length) throw new Error('truncated data');
    out.push({ owner: name, type: b.readUInt16BE(end), cls: b.readUInt16BE(end + 2), ttl: b.readUInt32BE(end + 4), at: end + 10, len });
    off = end + 10 + len;
  }
  return out;
}

/** A name in record data, or undefined when it is not a host name (such a record is left out). */
function hostNameAt(b: Buffer, off: number): Buffer | undefined {
  const { name } = readName(b, off);
  return isHostName(name) ? encodeName(name) : undefined;
}

/** A record's data re-encoded (names uncompressed), or undefined: left out. */
function rdata(b: Buffer, r: Rr): Buffer | undefined {
  const raw = b.subarray(r.at, r.at + r.len);
  switch (r.type) {
    case TYPE.A:
      return r.len === 4 ? raw : undefined;
    case TYPE.AAAA:
      return r.len === 16 ? raw : undefined;
    case TYPE.CNAME:
    case TYPE.PTR:
    case TYPE.NS:
      return hostNameAt(b, r.at);
    case TYPE.MX:
    case TYPE.SRV: {
      const fixed = r.type === TYPE.MX ? 2 : 6;
      const target = r.len > fixed ? hostNameAt(b, r.at + fixed) : undefined;
      return target && Buffer.concat([raw.subarray(0, fixed), target]);
    }
    case TYPE.SOA: {
      const m = readName(b, r.at);
      const rn = readName(b, m.end);
      if (!isHostName(m.name) || rn.end + 20 > r.at + r.len) return undefined;
      return Buffer.concat([encodeName(m.name), encodeName(rn.name), b.subarray(rn.end, rn.end + 20)]);
    }
    case TYPE.TXT:
    case TYPE.SVCB:
    case TYPE.HTTPS:
    case TYPE.CAA:
      // No compressed names inside (RFC 9460 for SVCB): their bytes are their fields.
      return raw;
    default:
      return undefined;
  }
}

/** The records on `q`'s CNAME chain: its aliases, then the records of the type asked. */
function chainRecords(b: Buffer, rrs: Rr[], q: { name: string; type: number }): Array<{ rr: Rr; data: Buffer }> {
  const names = new Set([q.name]);
  const out: Array<{ rr: Rr; data: Buffer }> = [];
  const taken = new Set<Rr>();
  for (let hop = 0; hop < MAX_CHAIN; hop++) {
    const alias = rrs.find((r) => !taken.has(r) && r.type === TYPE.CNAME && r.cls === CLASS_IN && names.has(r.owner));
    const data = alias && rdata(b, alias);
    if (!alias || !data) break;
    taken.add(alias);
    out.push({ rr: alias, data });
    names.add(readName(b, alias.at).name);
  }
  if (q.type === TYPE.CNAME) return out;
  for (const r of rrs) {
    if (r.type !== q.type || r.cls !== CLASS_IN || !names.has(r.owner)) continue;
    const data = rdata(b, r);
    if (data) out.push({ rr: r, data });
  }
  return out;
}

/**
 * The reply to the client's `query` (question `q`) from the upstream's
 * `answer` to forkd's own query for q.name/q.type, at most `maxLen` bytes;
 * undefined when `answer` is malformed or answers another question.
 */
export function rebuildReply(query: Buffer, q: DnsQuestion, answer: Buffer, maxLen: number): Buffer | undefined {
  try {
    if (answer.length < 12 || (answer[2]! & 0x80) === 0 || answer.readUInt16BE(4) !== 1) return undefined;
    const asked = readName(answer, 12);
    if (asked.name !== q.name || answer.readUInt16BE(asked.end) !== q.type || answer.readUInt16BE(asked.end + 2) !== CLASS_IN) return undefined;
    const up = answer[3]! & 0x0f;
    const rcode = up === RCODE.NOERROR || up === RCODE.NXDOMAIN ? up : RCODE.SERVFAIL;
    const records = rcode === RCODE.SERVFAIL ? [] : chainRecords(answer, answerRecords(answer), q);
    const h = Buffer.from(query.subarray(0, 12));
    // QR, the query's RD; RA; the upstream's TC (a longer answer over TCP would need forkd to ask over TCP).
    h[2] = 0x80 | (query[2]! & 0x01) | (answer[2]! & 0x02);
    h[3] = 0x80 | rcode;
    h.writeUInt16BE(1, 4);
    h.writeUInt32BE(0, 8);
    const parts = [h, query.subarray(12, q.end)];
    let size = q.end;
    let n = 0;
    for (const { rr, data } of records) {
      const owner = encodeName(rr.owner);
      const fixed = Buffer.alloc(10);
      fixed.writeUInt16BE(rr.type, 0);
      fixed.writeUInt16BE(CLASS_IN, 2);
      fixed.writeUInt32BE(rr.ttl, 4);
      fixed.writeUInt16BE(data.length, 8);
      if (size + owner.length + 10 + data.length > maxLen) {
        h[2] |= 0x02;
        break;
      }
      parts.push(owner, fixed, data);
      size += owner.length + 10 + data.length;
      n++;
    }
    h.writeUInt16BE(n, 6);
    return Buffer.concat(parts);
  } catch {
    return undefined;
  }
}
