import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { FileEntry, PolicyDocument } from '@forkd/protocol';
import { codeChangingVar } from './code-env.js';
import { argvEnv, auditLine, describeExec } from './exec-call.js';
import { decideExec, type ScopedPolicy } from './policy-evaluator.js';
import { GUEST_DEFAULT_PATH, resolveProgram } from './program-path.js';

const tenant = (policy: PolicyDocument): ScopedPolicy => ({ scope: 'tenant', id: 'acme', policy });
const sandbox = (policy: PolicyDocument): ScopedPolicy => ({ scope: 'sandbox', id: 'sbx-1', policy });

/** A sandbox's filesystem as its guest would lstat it. */
function fakeFs(entries: Record<string, Partial<FileEntry>>) {
  const seen: string[] = [];
  const stat = async (path: string): Promise<FileEntry | undefined> => {
    seen.push(path);
    const e = entries[path];
    return e && { name: path, path, type: 'file', size: 1, mode: 0o100755, mtime: '', uid: 0, gid: 0, ...e };
  };
  return { stat, seen };
}

test('code-changing variables: the documented list, prefixes, function exports; data variables are not', () => {
  for (const n of ['BASH_ENV', 'ENV', 'PATH', 'LD_PRELOAD', 'LD_LIBRARY_PATH', 'LD_AUDIT', 'LD_ANYTHING', 'BASH_FUNC_ls%%', 'ls()', 'PYTHONSTARTUP', 'PYTHONPATH', 'PYTHONHOME', 'NODE_OPTIONS', 'NODE_PATH', 'PERL5OPT', 'PERL5LIB', 'RUBYOPT', 'RUBYLIB', 'GIT_SSH_COMMAND', 'GIT_EXEC_PATH', 'GIT_CONFIG_COUNT', 'SHELLOPTS', 'PS4', 'PROMPT_COMMAND', 'IFS', 'GCONV_PATH', 'HOME', 'GLIBC_TUNABLES']) {
    assert.ok(codeChangingVar(n), n);
  }
  for (const n of ['FOO', 'LANG', 'TERM', 'TZ', 'MALLOC_ARENA_MAX', 'PATHS', 'MY_PATH', 'NODE_ENV']) assert.ok(!codeChangingVar(n), n);
  assert.ok(codeChangingVar('X', '() { id; }'), 'a value bash imports as a function');
});

test('env: a code-changing variable is refused under an allow list, naming it, unless allowEnv names it', () => {
  const ps = [tenant({ exec: { allow: ['^ls$'] } })];
  const d = decideExec(ps, { argv: ['ls'], env: { BASH_ENV: '/dev/stdin' } });
  assert.equal(d.action, 'deny');
  assert.match(d.action === 'deny' ? d.rule : '', /^tenant:exec\.allowEnv \("BASH_ENV" changes which code runs/);
  assert.equal(decideExec(ps, { argv: ['ls'], env: { PATH: '/tmp' } }).action, 'deny');
  assert.equal(decideExec(ps, { argv: ['ls'], env: { FOO: 'bar' } }).action, 'allow', 'data variables pass');
  assert.equal(decideExec([tenant({ exec: { allow: ['^ls$'], allowEnv: ['PATH'] } })], { argv: ['ls'], env: { PATH: '/opt/bin:/usr/bin' } }).action, 'allow');
  assert.equal(decideExec([tenant({ exec: { allow: ['^ls$'], allowEnv: ['PATH'] } })], { argv: ['ls'], env: { PATH: '/x', LD_PRELOAD: '/x.so' } }).action, 'deny', 'named one by one');
  // Each scope's list on its own: the sandbox naming PATH does not lift the tenant's refusal.
  assert.equal(decideExec([tenant({ exec: { allow: ['.*'] } }), sandbox({ exec: { allow: ['.*'], allowEnv: ['PATH'] } })], { argv: ['ls'], env: { PATH: '/tmp' } }).action, 'deny');
  assert.equal(decideExec([tenant({ exec: { deny: ['^rm '] } })], { argv: ['ls'], env: { PATH: '/tmp' } }).action, 'allow', 'a deny-only policy is a guard rail: no allow list, no env refusal');
});

test('env: an `env VAR=x prog` argv counts as setting it', () => {
  assert.deepEqual(argvEnv(['env', 'A=1', '-u', 'B']), { A: '1' });
  assert.deepEqual(argvEnv(['/usr/bin/env', '-i', 'LD_PRELOAD=/x.so', 'ls']), { LD_PRELOAD: '/x.so' });
  assert.deepEqual(argvEnv(['ls', 'A=1']), {});
  const { call } = describeExec({ argv: ['env', 'LD_PRELOAD=/tmp/x.so', 'ls'] });
  assert.equal(decideExec([tenant({ exec: { allow: ['^env '] } })], call).action, 'deny');
});

test('cwd and user: allowCwd patterns and allowUsers names; absent means the home (~) and root', () => {
  const ps = [tenant({ exec: { allowCwd: ['^/work(/|$)'], allowUsers: ['user'] } })];
  assert.equal(decideExec(ps, { argv: ['ls'], cwd: '/work/a', user: 'user' }).action, 'allow');
  assert.match(JSON.stringify(decideExec(ps, { argv: ['ls'], cwd: '/tmp', user: 'user' })), /exec\.allowCwd \(cwd \\"\/tmp\\"\)/);
  assert.match(JSON.stringify(decideExec(ps, { argv: ['ls'], user: 'user' })), /allowCwd \(cwd \\"~\\"\)/);
  assert.match(JSON.stringify(decideExec(ps, { argv: ['ls'], cwd: '/work' })), /exec\.allowUsers \(user \\"root\\"\)/);
});

test('resolved program: allow rules written against the path the guest runs', () => {
  const ps = [tenant({ exec: { allow: ['^/usr/bin/ls( |$)'] } })];
  assert.deepEqual(decideExec(ps, { argv: ['ls', '-l'], program: '/usr/bin/ls' }), { action: 'allow', rule: 'tenant:exec.allow[0] "^/usr/bin/ls( |$)"' });
  assert.equal(decideExec(ps, { argv: ['ls', '-l'], program: '/tmp/ls' }).action, 'deny', 'a planted ls is not /usr/bin/ls');
  assert.equal(decideExec(ps, { argv: ['ls', '-l'] }).action, 'deny', 'unresolved: the path rule cannot match');
  assert.equal(decideExec(ps, { argv: ['/usr/bin/../../tmp/ls'] }).action, 'deny', 'a ".." step is refused under an allow list');
  assert.equal(decideExec([tenant({ exec: { allow: ['^/usr/bin/'] } })], { argv: ['/usr/bin/../../tmp/ls'] }).action, 'deny');
  assert.equal(decideExec([tenant({ exec: { deny: ['^/usr/bin/rm '] } })], { argv: ['rm', '-rf', '/x'], program: '/usr/bin/rm' }).action, 'deny', 'deny rules see it too');
});

test('resolution: execvp over the process PATH inside the sandbox (first runnable entry; symlinks followed to check; no host path)', async () => {
  const fs = fakeFs({ '/usr/bin/ls': {}, '/tmp/ls': {}, '/bin/ls': {}, '/usr/local/bin/ls': { mode: 0o100644 }, '/usr/sbin/ls': { type: 'dir', mode: 0o40755 }, '/usr/bin/sh': { type: 'symlink', linkTarget: 'dash' }, '/usr/bin/dash': {}, '/usr/local/sbin/sh': { type: 'symlink', linkTarget: '/nowhere' }, '/work/ls': {} });
  assert.equal(await resolveProgram('ls', GUEST_DEFAULT_PATH, undefined, fs.stat), '/usr/bin/ls', 'not executable and directories are passed over');
  assert.equal(await resolveProgram('ls', '/tmp:/usr/bin', undefined, fs.stat), '/tmp/ls');
  assert.equal(await resolveProgram('sh', GUEST_DEFAULT_PATH, undefined, fs.stat), '/usr/bin/sh', 'a dangling link is passed over; the path is the one execve gets');
  assert.equal(await resolveProgram('ls', ':/usr/bin', '/work', fs.stat), '/work/ls', 'an empty entry is the cwd');
  assert.equal(await resolveProgram('ls', '.:/usr/bin', undefined, fs.stat), undefined, 'a relative entry without a cwd: unknown');
  assert.equal(await resolveProgram('ls', '/usr/../tmp:/usr/bin', undefined, fs.stat), undefined);
  assert.equal(await resolveProgram('./ls', GUEST_DEFAULT_PATH, '/work', fs.stat), '/work/ls');
  assert.equal(await resolveProgram('./ls', GUEST_DEFAULT_PATH, undefined, fs.stat), undefined);
  assert.equal(await resolveProgram('/x/y', GUEST_DEFAULT_PATH, undefined, fs.stat), '/x/y', 'a path is taken as given');
  assert.equal(await resolveProgram('nope', GUEST_DEFAULT_PATH, undefined, fs.stat), undefined);
  assert.ok(fs.seen.every((p) => p.startsWith('/')), 'only absolute paths inside the sandbox are asked');
});

test('what approvers see: the call env, code-changing sandbox env (not its other variables), cwd, user', () => {
  const d = describeExec({ argv: ['ls'], env: { A: '1', BASH_ENV: '/dev/stdin' }, cwd: '/tmp', user: 'bob' }, { OPENAI_API_KEY: 'sk-secret', LD_PRELOAD: '/x.so', PATH: '/tmp' });
  assert.deepEqual(d.context, { env: { LD_PRELOAD: '/x.so', PATH: '/tmp', A: '1', BASH_ENV: '/dev/stdin' }, cwd: '/tmp', user: 'bob' });
  assert.equal(d.pathVar, '/tmp');
  assert.deepEqual(d.call.env, { OPENAI_API_KEY: 'sk-secret', LD_PRELOAD: '/x.so', PATH: '/tmp', A: '1', BASH_ENV: '/dev/stdin' });
  assert.equal(describeExec({ argv: ['ls'] }).pathVar, GUEST_DEFAULT_PATH);
  assert.equal(auditLine('ls', { ...d.context, program: '/tmp/ls' }), "ls [cwd=/tmp, user=bob, program=/tmp/ls, env LD_PRELOAD=/x.so, env PATH=/tmp, env A=1, env BASH_ENV=/dev/stdin]");
});

test('property: under an allow list of everything, a call is refused exactly when it sets a code-changing variable its scope does not name; never a throw', () => {
  const names = fc.oneof(fc.constantFrom('PATH', 'LD_PRELOAD', 'BASH_ENV', 'BASH_FUNC_x%%', 'GIT_SSH_COMMAND', 'FOO', 'LANG', 'HOME', 'x()'), fc.string({ minLength: 1, maxLength: 12 }));
  fc.assert(
    fc.property(fc.dictionary(names, fc.string({ maxLength: 20 }), { maxKeys: 6 }), fc.array(names, { maxLength: 3 }), fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 4 }), (env, allowEnv, argv) => {
      const call = describeExec({ argv, env }).call;
      const d = decideExec([tenant({ exec: { allow: ['.*'], allowEnv } })], call);
      const bad = Object.entries(call.env ?? {}).some(([k, v]) => codeChangingVar(k, v) && !allowEnv.includes(k));
      const dotdot = (argv[0] ?? '').split('/').includes('..');
      assert.equal(d.action === 'deny', bad || dotdot, JSON.stringify({ env, allowEnv, argv, d }));
    }),
    { numRuns: 2000 },
  );
});

test('property: resolution asks only absolute, ".."-free paths of the guest and answers one of them or nothing', async () => {
  const seg = fc.oneof(fc.constantFrom('', '.', '..', 'bin', 'usr', 'tmp', 'ls'), fc.string({ maxLength: 6 }));
  await fc.assert(
    fc.asyncProperty(fc.array(seg, { maxLength: 5 }).map((s) => s.join(':')), fc.oneof(fc.constant('ls'), fc.string({ maxLength: 8 })), fc.option(fc.oneof(fc.constant('/work'), fc.string({ maxLength: 8 })), { nil: undefined }), fc.boolean(), async (pathVar, name, cwd, found) => {
      const asked: string[] = [];
      const got = await resolveProgram(name, pathVar, cwd, async (p) => {
        asked.push(p);
        return found ? { name: p, path: p, type: 'file', size: 1, mode: 0o100755, mtime: '', uid: 0, gid: 0 } : undefined;
      });
      for (const p of asked) assert.ok(p.startsWith('/') && !p.split('/').includes('..'), p);
      if (got !== undefined && !name.includes('/')) assert.ok(asked.includes(got));
    }),
    { numRuns: 2000 },
  );
});
