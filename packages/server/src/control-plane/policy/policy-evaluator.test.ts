import { test } from 'node:test';
import assert from 'node:assert/strict';
import { PolicyDocument, POLICY_INPUT_MAX, policyPatternError } from '@forkd/protocol';
import { commandTexts, shellQuote } from './command-line.js';
import { checkLinear } from './linear-regexp.js';
import { normalPath, underPrefix } from './path-prefix.js';
import { callLimits, decideExec, decideFile, decideGrant, isHidden, type ScopedPolicy } from './policy-evaluator.js';

const sandbox = (policy: PolicyDocument): ScopedPolicy => ({ scope: 'sandbox', id: 'sbx-1', policy });
const tenant = (policy: PolicyDocument): ScopedPolicy => ({ scope: 'tenant', id: 'acme', policy });
const template = (policy: PolicyDocument): ScopedPolicy => ({ scope: 'template', id: 'py', policy });

test('command line: argv joined with shell quoting', () => {
  assert.equal(shellQuote('ls'), 'ls');
  assert.equal(shellQuote('a b'), "'a b'");
  assert.equal(shellQuote("it's"), `'it'\\''s'`);
  assert.equal(shellQuote(''), "''");
  assert.deepEqual(commandTexts(['rm', '-rf', '/']), ['rm -rf /']);
  assert.deepEqual(commandTexts(['echo', 'a;b']), ["echo 'a;b'"]);
});

test('command line: a shell -c invocation also shows its script', () => {
  assert.deepEqual(commandTexts(['bash', '-lc', 'rm -rf /']), ["bash -lc 'rm -rf /'", 'rm -rf /']);
  assert.deepEqual(commandTexts(['/bin/sh', '-c', 'git push']), ["/bin/sh -c 'git push'", 'git push']);
  assert.deepEqual(commandTexts(['/usr/bin/env', 'A=1', 'bash', '-e', '-c', 'x']), ['/usr/bin/env A=1 bash -e -c x', 'x']);
  assert.deepEqual(commandTexts(['busybox', 'sh', '-c', 'y']), ['busybox sh -c y', 'y']);
  assert.deepEqual(commandTexts(['bash', 'script.sh', '-c', 'z']), ['bash script.sh -c z'], 'after an operand -c is the script\'s argument');
  assert.deepEqual(commandTexts(['python3', '-c', 'print(1)']), ["python3 -c 'print(1)'"], 'not a shell');
});

test('exec: deny refuses, naming the rule; argv and bash -lc alike', () => {
  const ps = [sandbox({ exec: { deny: ['^rm -rf /$'] } })];
  assert.deepEqual(decideExec(ps, ['rm', '-rf', '/']), { action: 'deny', rule: 'sandbox:exec.deny[0] "^rm -rf /$"' });
  assert.deepEqual(decideExec(ps, ['/bin/bash', '-lc', 'rm -rf /']), { action: 'deny', rule: 'sandbox:exec.deny[0] "^rm -rf /$"' });
  assert.deepEqual(decideExec(ps, ['rm', '-rf', '/tmp/x']), { action: 'allow', rule: undefined });
});

test('exec: allow lists each must match; requireApproval gates; deny beats both', () => {
  const ps = [tenant({ exec: { allow: ['^(ls|git|echo)( |$)'] } }), sandbox({ exec: { allow: ['^git '], requireApproval: ['^git push'] } })];
  assert.deepEqual(decideExec(ps, ['git', 'status']), { action: 'allow', rule: 'tenant:exec.allow[0] "^(ls|git|echo)( |$)"' });
  assert.deepEqual(decideExec(ps, ['ls']), { action: 'deny', rule: 'sandbox:exec.allow' }, "the sandbox's list applies too");
  assert.deepEqual(decideExec(ps, ['cat', 'x']), { action: 'deny', rule: 'tenant:exec.allow' });
  assert.deepEqual(decideExec(ps, ['git', 'push', 'origin']), { action: 'approve', rule: 'sandbox:exec.requireApproval[0] "^git push"' });
  const withDeny = [...ps, template({ exec: { deny: ['--force'] } })];
  assert.equal(decideExec(withDeny, ['git', 'push', '--force']).action, 'deny', 'a call that would be refused never waits');
});

test('exec: a sandbox policy cannot lift a tenant deny', () => {
  const ps = [tenant({ exec: { deny: ['^curl '] } }), sandbox({ exec: { allow: ['.*'] } })];
  assert.deepEqual(decideExec(ps, ['curl', 'x']), { action: 'deny', rule: 'tenant:exec.deny[0] "^curl "' });
});

test('exec: input longer than the cap is refused when exec patterns exist, and is let through when none do', () => {
  const long = ['echo', 'a'.repeat(POLICY_INPUT_MAX + 1)];
  assert.equal(decideExec([sandbox({ exec: { deny: ['^never$'] } })], long).action, 'deny');
  assert.equal(decideExec([sandbox({ maxDurationSeconds: 5 })], long).action, 'allow');
  assert.deepEqual(decideExec([], ['anything']), { action: 'allow' });
});

test('grants: the same rules over names', () => {
  const ps = [sandbox({ grants: { deny: ['^prod-'], requireApproval: ['^github'] } })];
  assert.equal(decideGrant(ps, 'prod-db').action, 'deny');
  assert.equal(decideGrant(ps, 'github-token').action, 'approve');
  assert.equal(decideGrant(ps, 'npm').action, 'allow');
});

test('paths: normalised lexically; prefixes match whole components', () => {
  assert.equal(normalPath('/root//.ssh/'), '/root/.ssh');
  assert.equal(normalPath('/tmp/../root/./.ssh/id'), '/root/.ssh/id');
  assert.equal(normalPath('root/.ssh'), '/root/.ssh', 'relative to /');
  assert.equal(normalPath('/../../etc'), '/etc');
  assert.ok(underPrefix('/etc/passwd', '/etc/'));
  assert.ok(underPrefix('/etc', '/etc'));
  assert.ok(!underPrefix('/etcetera', '/etc'));
  assert.ok(underPrefix('/anything', '/'));
});

test('files: hidden refuses reads and writes, readOnly writes only, with `..` tricks seen through', () => {
  const ps = [tenant({ files: { readOnly: ['/etc'] } }), sandbox({ files: { hidden: ['/root/.ssh'] } })];
  assert.deepEqual(decideFile(ps, 'read', '/tmp/../root/.ssh/id_rsa'), { action: 'deny', rule: 'sandbox:files.hidden[0] "/root/.ssh"' });
  assert.equal(decideFile(ps, 'write', '/root/.ssh/authorized_keys').action, 'deny');
  assert.deepEqual(decideFile(ps, 'read', '/etc/passwd'), { action: 'allow' });
  assert.deepEqual(decideFile(ps, 'write', '/etc//passwd'), { action: 'deny', rule: 'tenant:files.readOnly[0] "/etc"' });
  assert.deepEqual(decideFile(ps, 'write', '/etcetera'), { action: 'allow' });
  assert.ok(isHidden(ps, '/root/.ssh'));
  assert.ok(!isHidden(ps, '/root'));
});

test('limits: the strictest of every scope, each with its rule; approval timeout has a default', () => {
  const l = callLimits([tenant({ maxDurationSeconds: 600, maxOutputBytes: 1000 }), sandbox({ maxDurationSeconds: 60, network: 'off', approvalTimeoutSeconds: 30 }), template({ maxOutputBytes: 5000 })]);
  assert.deepEqual(l.maxDurationSeconds, { value: 60, rule: 'sandbox:maxDurationSeconds' });
  assert.deepEqual(l.maxOutputBytes, { value: 1000, rule: 'tenant:maxOutputBytes' });
  assert.equal(l.networkOff, 'sandbox:network');
  assert.deepEqual(l.approvalTimeoutSeconds, { value: 30, rule: 'sandbox:approvalTimeoutSeconds' });
  const none = callLimits([]);
  assert.equal(none.maxDurationSeconds, undefined);
  assert.equal(none.networkOff, undefined);
  assert.equal(none.approvalTimeoutSeconds.value, 300);
});

test('validation: bad, long and catastrophic patterns are refused naming the pattern; good ones pass', () => {
  assert.equal(policyPatternError('^git push'), undefined);
  assert.equal(policyPatternError('^(ls|cat) /tmp/[a-z]+$'), undefined);
  assert.match(policyPatternError('(') ?? '', /not a regular expression/);
  assert.match(policyPatternError('(a)\\1') ?? '', /back-references/);
  assert.match(policyPatternError('^(?!git)') ?? '', /lookarounds/);
  assert.match(policyPatternError('(?<=x)y') ?? '', /lookarounds/);
  assert.match(policyPatternError('a'.repeat(513)) ?? '', /longer than 512/);
  const r = PolicyDocument.safeParse({ exec: { deny: ['^ok$', '(a)\\1'] } });
  assert.equal(r.success, false);
  assert.match(JSON.stringify(r.error?.issues), /\(a\)/);
  assert.equal(PolicyDocument.safeParse({ exec: { deny: [] }, unknown: 1 }).success, false, 'strict');
  assert.equal(PolicyDocument.safeParse({ files: { hidden: ['relative'] } }).success, false, 'prefixes are absolute');
  assert.equal(PolicyDocument.safeParse({ exec: { deny: ['^rm -rf /$'], requireApproval: ['^git push'] }, files: { readOnly: ['/etc'], hidden: ['/root/.ssh'] }, maxDurationSeconds: 600 }).success, true, "the issue's example");
});

test('matching runs in linear time: a catastrophic pattern over a long input returns at once', () => {
  const ps = [sandbox({ exec: { deny: ['^(a+)+$', '^(a|a)*$', '^.*a.*b.*c.*d$'] } })];
  const t0 = performance.now();
  assert.equal(decideExec(ps, ['a'.repeat(POLICY_INPUT_MAX - 10) + '!']).action, 'allow');
  assert.ok(performance.now() - t0 < 1000, `took ${performance.now() - t0} ms`);
  assert.equal(decideExec(ps, ['aaaa']).action, 'deny');
  assert.throws(() => checkLinear(['(a)\\1']), /linear time/);
  assert.doesNotThrow(() => checkLinear(['^git push', '(ls|cat)+']));
});
