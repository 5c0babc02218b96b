import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../usage-error.js';
import { parseExecArgs } from './exec.js';

test('ID -- CMD ARGS: everything after -- is argv, flags included', () => {
  const a = parseExecArgs(['sbx-1', '--', 'ls', '-la', '--help', '--', 'x']);
  assert.equal(a.id, 'sbx-1');
  assert.deepEqual(a.cmd, ['ls', '-la', '--help', '--', 'x']);
  assert.equal(a.background, false);
  assert.equal(a.json, false);
  assert.equal(a.timeoutMs, undefined);
  assert.deepEqual(a.spawn, {});
});

test('a single argument with spaces stays one argv element (no shell)', () => {
  assert.deepEqual(parseExecArgs(['sbx-1', '--', 'echo hi | wc']).cmd, ['echo hi | wc']);
});

test('options before and after the id, --env repeated', () => {
  const a = parseExecArgs(['-e', 'A=1', 'sbx-1', '--env', 'B=2', '-w', '/tmp', '-u', 'user', '--tag', 'job', '--timeout', '1.5', '--json', '--', 'make']);
  assert.deepEqual(a.spawn, { env: { A: '1', B: '2' }, cwd: '/tmp', user: 'user', tag: 'job' });
  assert.equal(a.timeoutMs, 1500);
  assert.equal(a.json, true);
  assert.deepEqual(a.cmd, ['make']);
});

test('--background', () => {
  const a = parseExecArgs(['-b', 'sbx-1', '--', 'sleep', '9']);
  assert.equal(a.background, true);
  assert.throws(() => parseExecArgs(['-b', '--timeout', '3', 'sbx-1', '--', 'sleep', '9']), UsageError);
});

test('without --, plain words after the id are the command', () => {
  assert.deepEqual(parseExecArgs(['sbx-1', 'uname', 'a']).cmd, ['uname', 'a']);
  assert.throws(() => parseExecArgs(['sbx-1', 'ls', '-la']), (e: unknown) => e instanceof UsageError && /after '--'/.test(e.message));
});

test('usage errors', () => {
  assert.throws(() => parseExecArgs([]), /missing ID/);
  assert.throws(() => parseExecArgs(['sbx-1']), /missing CMD/);
  assert.throws(() => parseExecArgs(['sbx-1', '--']), /missing CMD/);
  assert.throws(() => parseExecArgs(['sbx-1', 'extra', '--', 'ls']), /unexpected argument "extra"/);
  assert.throws(() => parseExecArgs(['--bogus', 'sbx-1', '--', 'ls']), /unknown option '--bogus'/);
  assert.throws(() => parseExecArgs(['--timeout', 'soon', 'sbx-1', '--', 'ls']), UsageError);
  assert.throws(() => parseExecArgs(['-e', 'bad name=1', 'sbx-1', '--', 'ls']), UsageError);
});
