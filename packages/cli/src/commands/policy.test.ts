import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../usage-error.js';
import { approvalsTable, contextSummary } from './approvals.js';
import { parsePolicyArgs, readPolicyFile } from './policy.js';

test('policy: set and get, for a sandbox, a tenant or a template', () => {
  assert.deepEqual(parsePolicyArgs(['set', 'sbx-1', '--file', 'p.json']), { action: 'set', id: 'sbx-1', target: 'sandbox', file: 'p.json', json: false });
  assert.deepEqual(parsePolicyArgs(['get', 'sbx-1', '--json']), { action: 'get', id: 'sbx-1', target: 'sandbox', file: undefined, json: true });
  assert.equal(parsePolicyArgs(['get', 'acme', '--tenant']).target, 'tenant');
  assert.equal(parsePolicyArgs(['set', 'py', '--template', '--file', '-']).target, 'template');
  assert.throws(() => parsePolicyArgs(['set', 'sbx-1']), UsageError);
  assert.throws(() => parsePolicyArgs(['get']), UsageError);
  assert.throws(() => parsePolicyArgs(['show', 'sbx-1']), UsageError);
  assert.throws(() => parsePolicyArgs(['get', 'x', '--tenant', '--template']), UsageError);
});

test('policy: the file is checked before any call, naming what is wrong', () => {
  const read = (body: string) => () => body;
  assert.deepEqual(readPolicyFile('p.json', read('{"exec": {"deny": ["^rm -rf /$"]}, "maxDurationSeconds": 600}')), { exec: { deny: ['^rm -rf /$'] }, maxDurationSeconds: 600 });
  assert.throws(() => readPolicyFile('p.json', read('{')), /p\.json: not JSON/);
  assert.throws(() => readPolicyFile('p.json', read('{"exec": {"deny": ["("]}}')), /exec\.deny\.0: .*not a regular expression/);
  assert.throws(() => readPolicyFile('p.json', read('{"nope": 1}')), /not a policy/);
});

test('approvals: a table of the waiting calls', () => {
  const out = approvalsTable([{ id: 'apr-1', sandbox: 'sbx-1', tenant: 'acme', kind: 'exec', command: 'git push', rule: 'sandbox:exec.requireApproval[0] "^git push"', createdAt: new Date(0).toISOString(), expiresAt: new Date(300_000).toISOString() }], 5000);
  assert.match(out, /^ID +SANDBOX +TENANT +AGE +RULE +COMMAND/);
  assert.match(out, /apr-1 +sbx-1 +acme .*git push/);
});

test('approvals: the table shows what the call runs with (cwd, user, program, every variable)', () => {
  const out = approvalsTable([{ id: 'apr-2', sandbox: 'sbx-1', tenant: 'acme', kind: 'exec', command: 'ls', rule: 'r', context: { env: { BASH_ENV: '/dev/stdin', LONG: 'x'.repeat(100) }, cwd: '/tmp', user: 'bob', program: '/usr/bin/ls' }, createdAt: new Date(0).toISOString(), expiresAt: new Date(300_000).toISOString() }], 5000);
  assert.match(out, /WITH/);
  assert.match(out, /cwd=\/tmp user=bob program=\/usr\/bin\/ls BASH_ENV="\/dev\/stdin" LONG="x+\.\.\./);
  assert.equal(contextSummary(undefined), '');
});
