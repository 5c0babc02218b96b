import { test } from 'node:test';
import assert from 'node:assert/strict';
import { atLimit, tenantNames, usageText } from './admin-model.js';

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
