import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseStamp } from './snapshot-stamp.js';

const good = { format: 1, forkd: '0.1.0', guestProtocol: 3, criu: '4.2', runc: '1.3.0-rc.1' };
const enc = (o: unknown) => new TextEncoder().encode(JSON.stringify(o));

test('a well-formed stamp is read back; each kind of damage is malformed, never a throw', () => {
  assert.deepEqual(parseStamp(enc(good)), { kind: 'stamped', stamp: good });
  // Extra keys (a newer forkd's) are ignored.
  assert.equal(parseStamp(enc({ ...good, newer: true })).kind, 'stamped');
  for (const bad of [null, [], 'x', { ...good, format: -1 }, { ...good, format: 1.5 }, { ...good, guestProtocol: '3' }, { ...good, criu: '4' }, { ...good, runc: '1.3.0; rm -rf /' }, { ...good, forkd: 'x'.repeat(65) }, { format: 1 }]) {
    assert.equal(parseStamp(enc(bad)).kind, 'malformed', JSON.stringify(bad));
  }
  assert.equal(parseStamp(new Uint8Array([0xff, 0xfe])).kind, 'malformed');
  assert.equal(parseStamp(new Uint8Array(5000).fill(32)).kind, 'malformed');
  // A prototype key is not a field.
  assert.equal(parseStamp(new TextEncoder().encode('{"__proto__":{"format":1,"forkd":"a","guestProtocol":1,"criu":"4.2","runc":"1.3.0"}}')).kind, 'malformed');
});

test('fuzz: any bytes, and any JSON, parse to a typed result whose stamp fields are what the checks expect', () => {
  const check = (bytes: Uint8Array) => {
    const r = parseStamp(bytes);
    assert.ok(['stamped', 'malformed'].includes(r.kind));
    if (r.kind === 'stamped') {
      assert.ok(Number.isSafeInteger(r.stamp.format) && Number.isSafeInteger(r.stamp.guestProtocol));
      assert.match(r.stamp.criu, /^[0-9]+\.[0-9]+/);
      assert.match(r.stamp.runc, /^[0-9]+\.[0-9]+/);
    }
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), check), { numRuns: 2000 });
  fc.assert(fc.property(fc.jsonValue(), (v) => check(enc(v))), { numRuns: 2000 });
  const field = fc.oneof(fc.string(), fc.integer(), fc.double(), fc.constant(null), fc.constantFrom('4.2', '1.3.0', '0.1.0'));
  fc.assert(fc.property(fc.record({ format: field, forkd: field, guestProtocol: field, criu: field, runc: field }, { requiredKeys: [] }), (o) => check(enc(o))), { numRuns: 2000 });
});
