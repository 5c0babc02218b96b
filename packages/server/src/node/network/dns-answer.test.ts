import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { dnsQuery, parseAddresses, parseQuestion, RCODE, readName, TYPE, type DnsQuestion } from './dns-message.js';
import { rebuildReply, UDP_MAX } from './dns-answer.js';

/** forkd's query for a name the tests know to be encodable. */
const query = (id: number, name: string, type: number): Buffer => dnsQuery(id, name, type)!;

const name = (n: string) => Buffer.concat([...n.split('.').map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l)])), Buffer.from([0])]);
/** A pointer to offset 12: the question's name. */
const QNAME = Buffer.from([0xc0, 12]);

function rr(owner: Buffer, type: number, data: Buffer, ttl = 60, cls = 1): Buffer {
  const f = Buffer.alloc(10);
  f.writeUInt16BE(type, 0);
  f.writeUInt16BE(cls, 2);
  f.writeUInt32BE(ttl, 4);
  f.writeUInt16BE(data.length, 8);
  return Buffer.concat([owner, f, data]);
}

/** The upstream's answer to `query` (forkd's own) with these sections and rcode. */
function answer(query: Buffer, an: Buffer[], ns: Buffer[] = [], ar: Buffer[] = [], rcode = 0): Buffer {
  const h = Buffer.from(query.subarray(0, 12));
  h[2] = 0x81;
  h[3] = 0x80 | rcode;
  h.writeUInt16BE(an.length, 6);
  h.writeUInt16BE(ns.length, 8);
  h.writeUInt16BE(ar.length, 10);
  return Buffer.concat([h, query.subarray(12), ...an, ...ns, ...ar]);
}

/** A client's query: its own id, mixed case, an EDNS OPT record (never passed on). */
function clientQuery(n: string, type: number): { msg: Buffer; q: DnsQuestion } {
  const msg = Buffer.concat([query(0xbeef, n, type), rr(Buffer.from([0]), 41, Buffer.alloc(0))]);
  msg.writeUInt16BE(1, 10);
  return { msg, q: parseQuestion(msg)! };
}

/** The rebuilt reply's answer records as `owner type data` (names decoded), and its header counts. */
function decode(b: Buffer): { id: number; flags: number; rcode: number; counts: number[]; records: string[] } {
  let off = readName(b, 12).end + 4;
  const records: string[] = [];
  for (let i = 0; i < b.readUInt16BE(6); i++) {
    const o = readName(b, off);
    const type = b.readUInt16BE(o.end);
    const at = o.end + 10;
    const len = b.readUInt16BE(o.end + 8);
    const data = type === TYPE.A ? [...b.subarray(at, at + 4)].join('.') : type === TYPE.CNAME ? readName(b, at).name : type === TYPE.MX ? `${b.readUInt16BE(at)} ${readName(b, at + 2).name}` : b.subarray(at, at + len).toString('latin1');
    records.push(`${o.name} ${type} ${data}`);
    off = at + len;
  }
  assert.equal(off, b.length, 'nothing after the answer section');
  return { id: b.readUInt16BE(0), flags: b[2]!, rcode: b[3]! & 15, counts: [4, 6, 8, 10].map((o) => b.readUInt16BE(o)), records };
}

const ip = (a: string) => Buffer.from(a.split('.').map(Number));

test("the reply keeps only the question's CNAME chain of the type asked, re-encoded; no authority, additional or EDNS", () => {
  const { msg, q } = clientQuery('WWW.a.test', TYPE.A);
  const ours = query(7, q.name, q.type);
  const up = answer(
    ours,
    [
      rr(QNAME, TYPE.CNAME, name('cdn.b.test')),
      rr(name('cdn.b.test'), TYPE.A, ip('198.51.100.2')),
      rr(name('unrelated.test'), TYPE.A, ip('198.51.100.9')),
      rr(name('cdn.b.test'), TYPE.TXT, Buffer.from('\x05hello')),
      rr(QNAME, TYPE.A, ip('198.51.100.7'), 60, 3),
    ],
    [rr(name('b.test'), TYPE.NS, name('ns.evil.test'))],
    [rr(name('ns.evil.test'), TYPE.A, ip('198.51.100.66')), rr(Buffer.from([0]), 41, Buffer.alloc(0))],
  );
  const r = rebuildReply(msg, q, up, UDP_MAX)!;
  const d = decode(r);
  assert.deepEqual(d.records, ['www.a.test 5 cdn.b.test', 'cdn.b.test 1 198.51.100.2']);
  assert.deepEqual(d.counts, [1, 2, 0, 0]);
  assert.equal(d.id, 0xbeef);
  assert.equal(r.subarray(12, q.end).toString('latin1'), msg.subarray(12, q.end).toString('latin1'), "the client's question, its case kept");
  assert.deepEqual(parseAddresses(r)?.a, [{ addr: '198.51.100.2', ttl: 60 }], 'only the chain is learned');
});

test('a reply to another question, or malformed, is not used; only NOERROR and NXDOMAIN pass, the rest is SERVFAIL', () => {
  const { msg, q } = clientQuery('a.test', TYPE.A);
  const ip2 = rr(QNAME, TYPE.A, ip('198.51.100.2'));
  assert.equal(rebuildReply(msg, q, answer(query(1, 'b.test', TYPE.A), [ip2]), UDP_MAX), undefined, 'another name');
  assert.equal(rebuildReply(msg, q, answer(query(1, 'a.test', TYPE.TXT), [ip2]), UDP_MAX), undefined, 'another type');
  assert.equal(rebuildReply(msg, q, query(1, 'a.test', TYPE.A), UDP_MAX), undefined, 'a query, not a reply');
  const ours = query(1, 'a.test', TYPE.A);
  assert.equal(decode(rebuildReply(msg, q, answer(ours, [], [], [], RCODE.NXDOMAIN), UDP_MAX)!).rcode, RCODE.NXDOMAIN);
  const refused = decode(rebuildReply(msg, q, answer(ours, [ip2], [], [], RCODE.REFUSED), UDP_MAX)!);
  assert.deepEqual([refused.rcode, refused.records], [RCODE.SERVFAIL, []]);
  assert.deepEqual(decode(rebuildReply(msg, q, answer(ours, [rr(QNAME, TYPE.A, Buffer.alloc(5))]), UDP_MAX)!).records, [], 'an A record of 5 bytes is left out');
});

test('names in MX data are decompressed; a reply longer than UDP allows is cut at a record and marked TC', () => {
  const mx = clientQuery('a.test', TYPE.MX);
  const ours = query(1, 'a.test', TYPE.MX);
  const r = rebuildReply(mx.msg, mx.q, answer(ours, [rr(QNAME, TYPE.MX, Buffer.concat([Buffer.from([0, 10, 4]), Buffer.from('mail'), QNAME]))]), UDP_MAX)!;
  assert.deepEqual(decode(r).records, ['a.test 15 10 mail.a.test']);
  const a = clientQuery('a.test', TYPE.A);
  const many = Array.from({ length: 60 }, (_, i) => rr(name('a.test'), TYPE.A, ip(`198.51.100.${i}`)));
  const big = rebuildReply(a.msg, a.q, answer(query(1, 'a.test', TYPE.A), many), UDP_MAX)!;
  assert.ok(big.length <= UDP_MAX && (big[2]! & 0x02) !== 0, `${big.length} bytes, TC`);
  assert.equal(decode(big).records.length, Math.floor((UDP_MAX - a.q.end) / 22), 'each A record of a.test: 8 + 10 + 4 bytes');
  assert.equal(decode(rebuildReply(a.msg, a.q, answer(query(1, 'a.test', TYPE.A), many), 0xffff)!).records.length, 60, 'over TCP');
});

/** A well-formed upstream answer to forkd's query for `a.test` A from arbitrary records. */
const arbitraryAnswer = fc
  .array(
    fc.record({
      owner: fc.constantFrom(QNAME, name('a.test'), name('c.test'), name('x.c.test'), Buffer.from([0xc0, 40])),
      type: fc.constantFrom(TYPE.A, TYPE.CNAME, TYPE.TXT, TYPE.MX, TYPE.NULL, 41),
      data: fc.oneof(fc.constant(ip('198.51.100.2')), fc.constant(name('c.test')), fc.constant(name('x.c.test')), fc.constant(QNAME), fc.uint8Array({ maxLength: 40 }).map((u) => Buffer.from(u))),
      cls: fc.constantFrom(1, 1, 1, 3),
    }),
    { maxLength: 12 },
  )
  .map((rs) => answer(query(1, 'a.test', TYPE.A), rs.map((x) => rr(x.owner, x.type, x.data, 60, x.cls))));

test('fuzz: any upstream bytes give a bounded reply of chain records of the type asked, or nothing; never a throw', () => {
  const { msg, q } = clientQuery('a.test', TYPE.A);
  const mutated = fc.tuple(arbitraryAnswer, fc.array(fc.tuple(fc.nat(), fc.nat(255)), { maxLength: 6 }), fc.nat()).map(([b, edits, cut]) => {
    const c = Buffer.from(b);
    for (const [at, v] of edits) c[at % c.length] = v;
    return c.subarray(0, c.length - (cut % 4 === 0 ? cut % c.length : 0));
  });
  fc.assert(
    fc.property(fc.oneof(arbitraryAnswer, mutated, fc.uint8Array({ maxLength: 600 }).map((u) => Buffer.from(u))), fc.constantFrom(UDP_MAX, 0xffff), (up, max) => {
      const r = rebuildReply(msg, q, up, max);
      if (!r) return;
      assert.ok(r.length <= max);
      const d = decode(r);
      assert.deepEqual(d.counts.slice(0, 1).concat(d.counts.slice(2)), [1, 0, 0]);
      const chain = new Set(['a.test']);
      for (const rec of d.records) {
        const [owner = '', type = '', data = ''] = rec.split(' ');
        assert.ok(chain.has(owner), rec);
        assert.ok(type === '1' || type === '5', rec);
        if (type === '5') chain.add(data);
      }
    }),
    { numRuns: 5000 },
  );
});
