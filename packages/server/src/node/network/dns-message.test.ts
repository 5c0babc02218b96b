import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { dnsQuery, errorReply, parseAddresses, parseQuestion, RCODE } from './dns-message.js';
import { hostileBytes, prefixes } from '../../testing/fuzz-bytes.js';

/** An answer to `q` with a CNAME (compressed) and an A record. */
function answer(q: Buffer): Buffer {
  const r = Buffer.from(q);
  r[2] = 0x81;
  r[3] = 0x80;
  r.writeUInt16BE(2, 6);
  const cname = Buffer.from([0xc0, 12, 0, 5, 0, 1, 0, 0, 0, 60, 0, 2, 0xc0, 12]);
  const a = Buffer.from([0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 0x2c, 0, 4, 203, 0, 113, 2]);
  return Buffer.concat([r, cname, a]);
}

test('a query round-trips; an answer gives its A records and TTLs; an error reply echoes the question', () => {
  const q = dnsQuery(0x1234, 'A.Test')!;
  const parsed = parseQuestion(q);
  assert.deepEqual(parsed, { id: 0x1234, name: 'a.test', type: 1, end: q.length });
  assert.deepEqual(parseAddresses(answer(q)), { rcode: 0, a: [{ addr: '203.0.113.2', ttl: 300 }] });
  const e = errorReply(q, parsed!, RCODE.NXDOMAIN);
  assert.equal(e.readUInt16BE(0), 0x1234);
  assert.equal(e[3]! & 0x0f, RCODE.NXDOMAIN);
  assert.equal(parseAddresses(e)?.a.length, 0);
  assert.equal(parseQuestion(answer(q)), undefined, 'a response is not a query');
});

test('malformed messages are refused, never thrown: truncations, pointer loops', () => {
  const q = dnsQuery(1, 'a.test')!;
  for (let n = 0; n < q.length; n++) assert.equal(parseQuestion(q.subarray(0, n)), undefined, `truncated at ${n}`);
  const loop = Buffer.from(q);
  loop[12] = 0xc0;
  loop[13] = 12;
  assert.equal(parseQuestion(loop), undefined);
  const ans = answer(q);
  for (let n = 0; n < ans.length; n++) parseAddresses(ans.subarray(0, n));
});

/** A query as stub resolvers send it: EDNS (an OPT record in the additional section), AAAA. */
function ednsQuery(name: string, type: number): Buffer {
  const q = dnsQuery(0xbeef, name)!;
  q.writeUInt16BE(type, q.length - 4);
  q.writeUInt16BE(1, 10);
  return Buffer.concat([q, Buffer.from([0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, 0])]);
}

const isQuad = (a: string) => /^\d{1,3}(\.\d{1,3}){3}$/.test(a) && a.split('.').every((n) => Number(n) <= 255);

test('a question whose name is a compression pointer is no question (a reply echoing it would point past its end)', () => {
  const b = Buffer.from([190, 239, 1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 192, 17, 0, 0, 41, 4, 208, 0, 0, 0, 0, 0, 0]);
  assert.equal(parseQuestion(b), undefined);
});

test('fuzz: truncated, mutated, oversized and random messages never throw; what parses is well-formed', () => {
  const q = dnsQuery(7, 'www.a.test')!;
  const valid = [q, ednsQuery('a.test', 28), answer(q), answer(dnsQuery(9, `${'x'.repeat(63)}.test`)!)];
  fc.assert(
    fc.property(hostileBytes(valid, 600), (b) => {
      const question = parseQuestion(b);
      if (question) {
        assert.ok(question.end <= b.length && question.end >= 17);
        assert.equal(question.name, question.name.toLowerCase());
        const e = errorReply(b, question, RCODE.NXDOMAIN);
        assert.equal(parseAddresses(e)?.rcode, RCODE.NXDOMAIN);
      }
      const got = parseAddresses(b);
      if (got) assert.ok(got.rcode >= 0 && got.rcode < 16 && got.a.every((r) => isQuad(r.addr) && r.ttl >= 0));
    }),
    { numRuns: 5000 },
  );
});

test('fuzz: every prefix of a real query is no question, then the question; every name a query can carry round-trips', () => {
  const q = ednsQuery('Mail.A.Test', 1);
  const end = q.length - 11;
  for (const p of prefixes(q)) assert.equal(parseQuestion(p)?.name, p.length < end ? undefined : 'mail.a.test', `prefix ${p.length}`);
  const label = fc.string({ unit: fc.constantFrom(...'abcxyz019-_'.split('')), minLength: 1, maxLength: 63 });
  fc.assert(
    fc.property(fc.array(label, { minLength: 1, maxLength: 4 }), fc.nat(0xffff), (labels, id) => {
      const name = labels.join('.');
      const built = dnsQuery(id, name);
      assert.ok(built);
      assert.deepEqual(parseQuestion(built), { id, name: name.toLowerCase(), type: 1, end: built.length });
    }),
    { numRuns: 1000 },
  );
  fc.assert(fc.property(fc.string({ maxLength: 300 }), (name) => dnsQuery(1, name) === undefined || parseQuestion(dnsQuery(1, name)!) !== undefined), { numRuns: 2000 });
  for (const bad of ['', 'a..b', `${'x'.repeat(64)}.test`, 'x'.repeat(300), 'é€.test']) assert.equal(dnsQuery(1, bad), undefined, bad);
});
