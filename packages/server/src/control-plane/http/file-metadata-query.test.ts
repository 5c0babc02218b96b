import { test } from 'node:test';
import assert from 'node:assert/strict';
import { WriteQuery } from '@forkd/protocol';

test('an upload\'s metadata query is a JSON object of strings within the limits', () => {
  assert.deepEqual(WriteQuery.parse({ path: '/a', metadata: '{"author":"me","e2b.k":"v"}', metadataScope: 'e2b.' }), { path: '/a', metadata: { author: 'me', 'e2b.k': 'v' }, metadataScope: 'e2b.' });
  assert.deepEqual(WriteQuery.parse({ path: '/a', metadata: '{}' }).metadata, {});
  assert.equal(WriteQuery.parse({ path: '/a' }).metadata, undefined);
  for (const bad of ['nope', '[]', '"s"', '{"k":1}', '{"bad key":"v"}', '{"k":"line\\n"}', JSON.stringify({ k: 'v'.repeat(4100) })]) {
    assert.equal(WriteQuery.safeParse({ path: '/a', metadata: bad }).success, false, bad);
  }
  assert.equal(WriteQuery.safeParse({ path: '/a', metadata: '{}', metadataScope: 'a b' }).success, false);
});
