import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { reportError } from './report-error.js';
import { UsageError } from './usage-error.js';

function report(err: unknown, env: NodeJS.ProcessEnv = {}, command?: string): { status: number; out: string } {
  let out = '';
  const status = reportError(err, { env, command, write: (s) => (out += s) });
  return { status, out };
}

test('ForkdErrors print as `error: CODE: message` with exit 1', () => {
  const r = report(new ForkdError('NOT_FOUND', 'no sandbox sbx-x'));
  assert.equal(r.status, 1);
  assert.equal(r.out, 'error: NOT_FOUND: no sandbox sbx-x\n');
});

test('FORKD_DEBUG=1 adds the stderr tail from the details', () => {
  const err = new ForkdError('INTERNAL', 'runc failed', { stderrTail: 'line1\nline2' });
  assert.doesNotMatch(report(err).out, /line1/);
  assert.match(report(err, { FORKD_DEBUG: '1' }).out, /--- stderr tail ---\nline1\nline2\n/);
});

test('usage errors exit 2 and point at the command help', () => {
  const r = report(new UsageError('missing ID'), {}, 'exec');
  assert.equal(r.status, 2);
  assert.equal(r.out, "error: INVALID_ARGUMENT: missing ID\nRun 'forkd exec --help' for usage.\n");
});

test('local errors map errno to codes', () => {
  const enoent = Object.assign(new Error("ENOENT: no such file or directory, stat 'x'"), { code: 'ENOENT' });
  assert.match(report(enoent).out, /^error: NOT_FOUND: ENOENT/);
  assert.match(report(new Error('boom')).out, /^error: INTERNAL: boom/);
});

test('an UNAUTHENTICATED error says where keys come from', () => {
  let out = '';
  assert.equal(reportError(new ForkdError('UNAUTHENTICATED', 'an API key is required'), { write: (s) => void (out += s), env: {} }), 1);
  assert.match(out, /FORKD_API_KEY/);
  assert.match(out, /admin\.key/);
});
