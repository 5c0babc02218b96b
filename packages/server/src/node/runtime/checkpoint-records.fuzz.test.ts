import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { parseIdmapRecord, parseLayoutRecord } from './checkpoint-records.js';

const enc = (o: unknown) => new TextEncoder().encode(typeof o === 'string' ? o : JSON.stringify(o));

test('an idmap record is read back; a range over host root, past the last id or of another shape is malformed', () => {
  assert.deepEqual(parseIdmapRecord(enc({ hostId: 2 ** 31, size: 65536 })), { kind: 'idmap', idmap: { hostId: 2 ** 31, size: 65536 } });
  assert.deepEqual(parseIdmapRecord(enc({ hostId: 2 ** 31, size: 65536, newer: 1 })).kind, 'idmap');
  for (const bad of [{ hostId: 0, size: 65536 }, { hostId: 2 ** 32 - 65536, size: 65536 }, { hostId: 100000, size: 0 }, { hostId: -1, size: 10 }, { hostId: 1.5, size: 10 }, { hostId: '100000', size: 65536 }, { size: 65536 }, [], null, 7]) {
    assert.equal(parseIdmapRecord(enc(bad)).kind, 'malformed', JSON.stringify(bad));
  }
  assert.equal(parseIdmapRecord(enc('{"__proto__":{"hostId":100000,"size":65536}}')).kind, 'malformed');
  assert.equal(parseIdmapRecord(new Uint8Array([0xff, 0x7b])).kind, 'malformed');
  assert.equal(parseIdmapRecord(enc(`{"hostId":100000,"size":65536,"pad":"${'x'.repeat(5000)}"}`)).kind, 'malformed');
});

test('a layout record is read back; anything but a boolean devInRoot is malformed', () => {
  assert.deepEqual(parseLayoutRecord(enc({ devInRoot: true })), { kind: 'layout', devInRoot: true });
  assert.deepEqual(parseLayoutRecord(enc({ devInRoot: false })), { kind: 'layout', devInRoot: false });
  for (const bad of ['', '{', 'true', { devInRoot: 1 }, { devInRoot: 'true' }, {}, '{"__proto__":{"devInRoot":true}}']) {
    assert.equal(parseLayoutRecord(enc(bad)).kind, 'malformed', JSON.stringify(bad));
  }
});

test('fuzz: any bytes and any JSON give a typed result, and a range read is one the checks allow', () => {
  const check = (bytes: Uint8Array) => {
    const i = parseIdmapRecord(bytes);
    if (i.kind === 'idmap') assert.ok(i.idmap.hostId >= 1 && i.idmap.size >= 1 && i.idmap.hostId + i.idmap.size <= 2 ** 32 - 1);
    else assert.equal(i.kind, 'malformed');
    const l = parseLayoutRecord(bytes);
    assert.ok(l.kind === 'malformed' || typeof l.devInRoot === 'boolean');
  };
  fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), check), { numRuns: 2000 });
  fc.assert(fc.property(fc.jsonValue(), (v) => check(enc(JSON.stringify(v)))), { numRuns: 2000 });
  const field = fc.oneof(fc.integer({ min: -5, max: 2 ** 32 + 5 }), fc.double(), fc.boolean(), fc.string(), fc.constant(null));
  fc.assert(fc.property(fc.record({ hostId: field, size: field, devInRoot: field }, { requiredKeys: [] }), (o) => check(enc(o))), { numRuns: 2000 });
});
