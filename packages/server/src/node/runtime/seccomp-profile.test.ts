import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ALLOWED_SYSCALLS, CLONE_NAMESPACE_FLAGS, DENIED_ON_PURPOSE, ENOSYS, EPERM, seccompProfile } from './seccomp-profile.js';

const profile = seccompProfile('x64');
const allowedAnyhow = new Set(profile.syscalls.filter((r) => r.action === 'SCMP_ACT_ALLOW').flatMap((r) => r.names));

test('default deny with EPERM, native x86_64 only', () => {
  assert.equal(profile.defaultAction, 'SCMP_ACT_ERRNO');
  assert.equal(profile.defaultErrnoRet, EPERM);
  assert.deepEqual(profile.architectures, ['SCMP_ARCH_X86_64']);
  assert.deepEqual(seccompProfile('arm64').architectures, ['SCMP_ARCH_AARCH64']);
  assert.throws(() => seccompProfile('mips'));
});

test('nothing denied on purpose is allowed, even conditionally', () => {
  for (const name of DENIED_ON_PURPOSE) assert.ok(!allowedAnyhow.has(name), name);
  assert.equal(new Set(ALLOWED_SYSCALLS).size, ALLOWED_SYSCALLS.length, 'no duplicates');
});

test('clone only without namespace flags, clone3 answers ENOSYS', () => {
  const clone = profile.syscalls.filter((r) => r.names.includes('clone'));
  assert.equal(clone.length, 1);
  const arg = clone[0]?.args?.[0];
  assert.equal(arg?.op, 'SCMP_CMP_MASKED_EQ');
  assert.equal(arg?.valueTwo, 0);
  for (const [flag, bit] of Object.entries(CLONE_NAMESPACE_FLAGS)) assert.ok(((arg?.value ?? 0) & bit) === bit, flag);
  assert.equal((arg?.value ?? 0) & 0x00000f00, 0, 'CLONE_VM, CLONE_FS, CLONE_FILES and CLONE_SIGHAND (threads) pass');
  assert.deepEqual(profile.syscalls.find((r) => r.names.includes('clone3')), { names: ['clone3'], action: 'SCMP_ACT_ERRNO', errnoRet: ENOSYS });
});

test('socket, personality and ioctl only with the listed arguments', () => {
  // An unconditional rule would make libseccomp drop the conditional ones (see seccomp-ioctl.ts).
  for (const name of ['socket', 'personality', 'ioctl']) assert.ok(!ALLOWED_SYSCALLS.includes(name), name);
  for (const name of ['socket', 'personality']) {
    const rules = profile.syscalls.filter((r) => r.names.includes(name));
    assert.ok(rules.length > 0, name);
    for (const r of rules) assert.equal(r.args?.[0]?.op, 'SCMP_CMP_EQ', `${name} is never allowed unconditionally`);
  }
  const families = profile.syscalls.filter((r) => r.names.includes('socket')).map((r) => r.args?.[0]?.value);
  assert.deepEqual(families, [1, 2, 10, 16]);
});

// runc ignores a name libseccomp does not know, so a typo would silently refuse
// a syscall programs need: every name must be a real x86_64 syscall.
const NEWER_THAN_DEBIAN_12_HEADERS = ['cachestat', 'fchmodat2', 'map_shadow_stack', 'futex_wake', 'futex_wait', 'futex_requeue', 'statmount', 'listmount', 'mseal', 'setxattrat', 'getxattrat', 'listxattrat', 'removexattrat', 'file_getattr', 'file_setattr'];
const HEADER = '/usr/include/x86_64-linux-gnu/asm/unistd_64.h';

test('every name is an x86_64 syscall', { skip: !existsSync(HEADER) && `no ${HEADER}` }, () => {
  const known = new Set([...readFileSync(HEADER, 'utf8').matchAll(/#define __NR_(\w+) \d+/g)].map((m) => m[1]));
  for (const name of [...allowedAnyhow, ...DENIED_ON_PURPOSE]) assert.ok(known.has(name) || NEWER_THAN_DEBIAN_12_HEADERS.includes(name), name);
});
