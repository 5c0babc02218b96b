import { test } from 'node:test';
import assert from 'node:assert/strict';
import { atLimit, limitText, parseLimit, tenantNames, usageText } from './admin-model.js';

test('tenantNames: from keys and sandboxes, sorted, once each; sandboxes with no owner add none', () => {
  assert.deepEqual(tenantNames([{ tenant: 'beta' }, { tenant: 'acme' }, { tenant: 'beta' }], [{ tenant: 'zed' }, { tenant: 'acme' }, {}]), ['acme', 'beta', 'zed']);
  assert.deepEqual(tenantNames([], []), []);
});

test('usageText and atLimit: a null limit is none', () => {
  assert.equal(usageText(3, 10), '3 / 10');
  assert.equal(usageText(3, null), '3 / no limit');
  assert.equal(usageText(512, 1024, (n) => `${n} MB`), '512 MB / 1024 MB');
  assert.equal(atLimit(10, 10), true);
  assert.equal(atLimit(9, 10), false);
  assert.equal(atLimit(1e9, null), false);
});

test('parseLimit and limitText: empty is the default, none is no limit, numbers as typed; round trip', () => {
  assert.deepEqual(parseLimit(' '), { ok: true, value: undefined });
  assert.deepEqual(parseLimit('None'), { ok: true, value: null });
  assert.deepEqual(parseLimit('2048'), { ok: true, value: 2048 });
  assert.deepEqual(parseLimit('1.5'), { ok: true, value: 1.5 });
  for (const bad of ['-1', 'lots', '1e3', '0x10']) assert.equal(parseLimit(bad).ok, false, bad);
  for (const v of [undefined, null, 0, 7]) {
    const p = parseLimit(limitText(v));
    assert.ok(p.ok && p.value === v);
  }
});
