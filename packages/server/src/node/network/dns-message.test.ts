import { test } from 'node:test';
import assert from 'node:assert/strict';
import { aQuery, errorReply, parseAddresses, parseQuestion, RCODE_NXDOMAIN } from './dns-message.js';

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
  const q = aQuery(0x1234, 'A.Test')!;
  const parsed = parseQuestion(q);
  assert.deepEqual(parsed, { id: 0x1234, name: 'a.test', type: 1, end: q.length });
  assert.deepEqual(parseAddresses(answer(q)), { rcode: 0, a: [{ addr: '203.0.113.2', ttl: 300 }] });
  const e = errorReply(q, parsed!, RCODE_NXDOMAIN);
  assert.equal(e.readUInt16BE(0), 0x1234);
  assert.equal(e[3]! & 0x0f, RCODE_NXDOMAIN);
  assert.equal(parseAddresses(e)?.a.length, 0);
  assert.equal(parseQuestion(answer(q)), undefined, 'a response is not a query');
});

test('malformed messages are refused, never thrown: truncations, pointer loops', () => {
  const q = aQuery(1, 'a.test')!;
  for (let n = 0; n < q.length; n++) assert.equal(parseQuestion(q.subarray(0, n)), undefined, `truncated at ${n}`);
  const loop = Buffer.from(q);
  loop[12] = 0xc0;
  loop[13] = 12;
  assert.equal(parseQuestion(loop), undefined);
  const ans = answer(q);
  for (let n = 0; n < ans.length; n++) parseAddresses(ans.subarray(0, n));
});
