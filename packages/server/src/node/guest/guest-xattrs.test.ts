import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { encodeTlv, K, Tlv } from './guest-frames.js';
import { decodeXattrs, xattrFields } from './guest-xattrs.js';

const raw = (...vs: Array<string | Buffer>) => new Tlv(encodeTlv(vs.map((v) => [K.XATTR, v] as const))).raws(K.XATTR);

test('an agent that sends no XATTR (older than 3, or none set) gives no metadata', () => {
  assert.equal(decodeXattrs([]), undefined);
});

test('XATTR name=value pairs decode; the first of a repeated name wins; a value may hold =', () => {
  assert.deepEqual(decodeXattrs(raw('e2b.author=mish', 'k=a=b', 'k=later', 'empty=')), { 'e2b.author': 'mish', k: 'a=b', empty: '' });
});

test("the agent's word is untrusted: malformed, non-UTF-8 and oversized pairs are left out", () => {
  const bad = Buffer.from([0x6b, 0x3d, 0xff, 0xfe]);
  const m = decodeXattrs(raw('noequals', '=novalue', bad, `${'k'.repeat(300)}=v`, `big=${'v'.repeat(5000)}`, 'ok=1'));
  assert.deepEqual(m, { ok: '1' });
  const many = decodeXattrs(raw(...Array.from({ length: 100 }, (_, i) => `k${i}=v`)));
  assert.equal(Object.keys(many ?? {}).length, 64);
  const proto = decodeXattrs(raw('__proto__=x'));
  assert.equal(Object.getPrototypeOf(proto), Object.prototype);
  assert.equal(Object.getOwnPropertyDescriptor(proto, '__proto__')?.value, 'x');
});

test('write fields carry the scope and pairs; bad metadata is refused before the agent sees it', () => {
  const t = new Tlv(encodeTlv(xattrFields({ a: '1', 'e2b.b': '2' }, 'e2b.')));
  assert.equal(t.str(K.XATTR_REPLACE), 'e2b.');
  assert.deepEqual(t.strs(K.XATTR), ['a=1', 'e2b.b=2']);
  assert.equal(new Tlv(encodeTlv(xattrFields({}))).str(K.XATTR_REPLACE), '');
  for (const m of <Record<string, string>[]>[{ 'bad key': 'v' }, { '': 'v' }, { k: 'bad\nvalue' }, { k: 'é' }, { ['k'.repeat(251)]: 'v' }, { k: 'v'.repeat(4096) }]) {
    assert.throws(() => xattrFields(m), (e: unknown) => e instanceof ForkdError && e.code === 'INVALID_ARGUMENT');
  }
  assert.doesNotThrow(() => xattrFields({ ['k'.repeat(250)]: 'v' }));
});
