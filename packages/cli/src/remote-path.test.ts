import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseCopyEndpoint } from './remote-path.js';
import { UsageError } from './usage-error.js';

test('ID:/path is remote; the path keeps any further colons', () => {
  assert.deepEqual(parseCopyEndpoint('sbx-abcdefghijkl:/work/a.txt'), { kind: 'remote', id: 'sbx-abcdefghijkl', path: '/work/a.txt' });
  assert.deepEqual(parseCopyEndpoint('sbx-abcdefghijkl:/a:b'), { kind: 'remote', id: 'sbx-abcdefghijkl', path: '/a:b' });
  assert.deepEqual(parseCopyEndpoint('sbx-abcdefghijkl:/'), { kind: 'remote', id: 'sbx-abcdefghijkl', path: '/' });
});

test('local paths, including ones with a colon after a slash, and -', () => {
  for (const p of ['./a:b', '/tmp/x:y', 'file.txt', '-', '.', '../up', 'dir/']) assert.deepEqual(parseCopyEndpoint(p), { kind: 'local', path: p });
});

test('a relative or empty path in a sandbox is a usage error', () => {
  assert.throws(() => parseCopyEndpoint('sbx-abcdefghijkl:work/a'), UsageError);
  assert.throws(() => parseCopyEndpoint('sbx-abcdefghijkl:'), UsageError);
});
