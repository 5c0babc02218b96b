import { test } from 'node:test';
import assert from 'node:assert/strict';
import { requestUser, resolvePath } from './envd-paths.js';
import { permissionString, preorder } from './entry-info.js';
import { endEvent, signalNumber } from './process-service.js';

test("envd's path rules", () => {
  assert.equal(resolvePath('', 'user'), '/home/user');
  assert.equal(resolvePath(undefined, 'root'), '/root');
  assert.equal(resolvePath('~', 'user'), '/home/user');
  assert.equal(resolvePath('~/a/../b', 'user'), '/home/user/b');
  assert.equal(resolvePath('hello.txt', 'root'), '/root/hello.txt');
  assert.equal(resolvePath('/tmp//x/', 'user'), '/tmp/x/');
  assert.throws(() => resolvePath('~other/x', 'user'));
});

test('the request user comes from Basic auth', () => {
  assert.equal(requestUser(undefined), 'user');
  assert.equal(requestUser(`Basic ${Buffer.from('root:').toString('base64')}`), 'root');
  assert.throws(() => requestUser(`Basic ${Buffer.from('../x:').toString('base64')}`));
});

test('EntryInfo details: permissions as Go prints them, ListDir pre-order', () => {
  assert.equal(permissionString('file', 0o644), '-rw-r--r--');
  assert.equal(permissionString('dir', 0o755), 'drwxr-xr-x');
  assert.equal(permissionString('symlink', 0o777), 'Lrwxrwxrwx');
  const paths = ['subdir2', 'subdir1/subdir1_2', 'file1.txt', 'subdir1', 'subdir2/subdir2_1', 'subdir1/subdir1_1'];
  assert.deepEqual(paths.sort(preorder), ['file1.txt', 'subdir1', 'subdir1/subdir1_1', 'subdir1/subdir1_2', 'subdir2', 'subdir2/subdir2_1']);
});

test("end events as the reference fills them from Go's process state", () => {
  assert.deepEqual(endEvent({ exitCode: 0, signal: 0, oomKilled: false }), { exitCode: 0, exited: true, status: 'exit status 0' });
  assert.deepEqual(endEvent({ exitCode: 1, signal: 0, oomKilled: false }), { exitCode: 1, exited: true, status: 'exit status 1', error: 'exit status 1' });
  assert.deepEqual(endEvent({ exitCode: 0, signal: 9, oomKilled: false }), { exitCode: -1, exited: false, status: 'signal: killed', error: 'signal: killed' });
  assert.equal(signalNumber('SIGNAL_SIGKILL'), 9);
  assert.equal(signalNumber(15), 15);
  assert.throws(() => signalNumber('SIGNAL_SIGHUP'));
});
