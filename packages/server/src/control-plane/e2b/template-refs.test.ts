import { test } from 'node:test';
import assert from 'node:assert/strict';
import { e2bRefOf, forkdTemplateName, parseE2bRef } from './template-refs.js';

test('E2B names: alias is the default tag; alias:tag is its own forkd template; bad ones refused', () => {
  assert.deepEqual(parseE2bRef('app'), { alias: 'app', tag: 'default' });
  assert.equal(forkdTemplateName(parseE2bRef('app')), 'app');
  assert.equal(forkdTemplateName(parseE2bRef('app:default')), 'app');
  assert.equal(forkdTemplateName(parseE2bRef('e2b-tags-test:v1-0b8e')), 'e2b-tags-test--v1-0b8e');
  assert.deepEqual(e2bRefOf('e2b-tags-test--v1-0b8e'), { alias: 'e2b-tags-test', tag: 'v1-0b8e' });
  assert.deepEqual(e2bRefOf('app'), { alias: 'app', tag: 'default' });
  for (const bad of ['app:', ':v1', 'App', 'a--b', 'app:v1:x', 'app:V1', 'app:a--b', `app:${'x'.repeat(70)}`, `${'a'.repeat(60)}:long-tag`]) assert.throws(() => parseE2bRef(bad), /invalid|too long/, bad);
});
