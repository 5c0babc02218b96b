import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { seccompProfile } from './seccomp-profile.js';

/**
 * The ioctl rules as runc hands them to libseccomp, evaluated here the way
 * the kernel's filter would: allowed when one ALLOW rule's mask matches,
 * else the default (EPERM). That reading is only sound because every rule
 * for ioctl is a conditional ALLOW and they never overlap: checked first.
 */
const rules = seccompProfile('x64').syscalls.filter((r) => r.names.includes('ioctl'));

const matches = (r: (typeof rules)[number], cmd: bigint) => {
  const a = r.args?.[0];
  return !!a && (cmd & BigInt(a.value)) === BigInt(a.valueTwo ?? 0);
};
const allowed = (cmd: bigint) => rules.some((r) => matches(r, cmd));

/** `_IOC` of asm-generic/ioctl.h: direction, size, type, number. */
const ioc = (dir: number, type: number, nr: number, size: number) => (BigInt(dir) << 30n) | (BigInt(size) << 16n) | (BigInt(type) << 8n) | BigInt(nr);
const [IO, IOW, IOR, IOWR] = [0, 1, 2, 3];

const REFUSED = {
  BTRFS_IOC_SNAP_CREATE: ioc(IOW, 0x94, 1, 4096),
  BTRFS_IOC_DEFRAG: ioc(IOW, 0x94, 2, 4096),
  BTRFS_IOC_ADD_DEV: ioc(IOW, 0x94, 10, 4096),
  BTRFS_IOC_RM_DEV: ioc(IOW, 0x94, 11, 4096),
  BTRFS_IOC_SUBVOL_CREATE: ioc(IOW, 0x94, 14, 4096),
  BTRFS_IOC_SNAP_DESTROY: ioc(IOW, 0x94, 15, 4096),
  BTRFS_IOC_DEFAULT_SUBVOL: ioc(IOW, 0x94, 19, 8),
  BTRFS_IOC_SNAP_CREATE_V2: ioc(IOW, 0x94, 23, 4096),
  BTRFS_IOC_SUBVOL_CREATE_V2: ioc(IOW, 0x94, 24, 4096),
  BTRFS_IOC_SUBVOL_SETFLAGS: ioc(IOW, 0x94, 26, 8),
  BTRFS_IOC_SCRUB: ioc(IOWR, 0x94, 27, 1024),
  BTRFS_IOC_BALANCE_V2: ioc(IOWR, 0x94, 32, 1024),
  BTRFS_IOC_SEND: ioc(IOW, 0x94, 38, 72),
  BTRFS_IOC_QUOTA_CTL: ioc(IOWR, 0x94, 40, 16),
  BTRFS_IOC_QGROUP_ASSIGN: ioc(IOW, 0x94, 41, 24),
  BTRFS_IOC_QGROUP_CREATE: ioc(IOW, 0x94, 42, 16),
  BTRFS_IOC_QGROUP_LIMIT: ioc(IOR, 0x94, 43, 48),
  FS_IOC_SETFSLABEL: ioc(IOW, 0x94, 50, 256),
  BTRFS_IOC_SNAP_DESTROY_V2: ioc(IOW, 0x94, 63, 4096),
  BTRFS_IOC_GET_SUBVOL_INFO: ioc(IOR, 0x94, 60, 504),
  FIFREEZE: ioc(IOWR, 0x58, 119, 4),
  FITHAW: ioc(IOWR, 0x58, 120, 4),
  FITRIM: ioc(IOWR, 0x58, 121, 24),
  FS_IOC_SHUTDOWN: ioc(IOR, 0x58, 125, 4),
};

const ALLOWED = {
  TCGETS: 0x5401n,
  TCSETS: 0x5402n,
  TIOCSCTTY: 0x540en,
  TIOCGWINSZ: 0x5413n,
  TIOCSWINSZ: 0x5414n,
  FIONREAD: 0x541bn,
  FIONBIO: 0x5421n,
  FIOCLEX: 0x5451n,
  TIOCGPTN: ioc(IOR, 0x54, 0x30, 4),
  TIOCSPTLCK: ioc(IOW, 0x54, 0x31, 4),
  SIOCGIFCONF: 0x8912n,
  FICLONE: ioc(IOW, 0x94, 9, 4),
  FICLONERANGE: ioc(IOW, 0x94, 13, 32),
  FIDEDUPERANGE: ioc(IOWR, 0x94, 54, 24),
  FS_IOC_GETFLAGS: ioc(IOR, 0x66, 1, 8),
  FS_IOC_SETFLAGS: ioc(IOW, 0x66, 2, 8),
  FS_IOC_FIEMAP: ioc(IOWR, 0x66, 11, 32),
  FS_IOC_FSGETXATTR: ioc(IOR, 0x58, 31, 28),
  FS_IOC_FSSETXATTR: ioc(IOW, 0x58, 32, 28),
  FS_IOC_GETVERSION: ioc(IOR, 0x76, 1, 8),
  TUNGETFEATURES: ioc(IOR, 0x54, 207, 4),
  NONE: ioc(IO, 0, 0, 0),
};

test('ioctl: conditional ALLOW rules only, disjoint, never unconditional', () => {
  assert.ok(rules.length > 0 && rules.length < 64, `${rules.length} rules`);
  for (const r of rules) {
    assert.deepEqual(r.names, ['ioctl'], 'alone in its rule');
    assert.equal(r.action, 'SCMP_ACT_ALLOW');
    assert.equal(r.args?.length, 1);
    assert.equal(r.args?.[0]?.index, 1, 'the request');
    assert.equal(r.args?.[0]?.op, 'SCMP_CMP_MASKED_EQ');
    // A zero mask would be a no-op libseccomp turns into an unconditional allow, dropping every refusal.
    assert.notEqual(r.args?.[0]?.value, 0);
    assert.equal((r.args?.[0]?.value ?? 0) & ~0xffff, 0, 'type and number only: high bits are masked away');
  }
  for (let i = 0; i < rules.length; i++) {
    for (let j = i + 1; j < rules.length; j++) {
      const [a, b] = [rules[i]?.args?.[0], rules[j]?.args?.[0]];
      assert.ok(a && b);
      assert.notEqual(((a.valueTwo ?? 0) ^ (b.valueTwo ?? 0)) & a.value & b.value, 0, `rules ${i} and ${j} overlap`);
    }
  }
});

test('ioctl: Btrfs administration, freeze, thaw, trim and shutdown are refused', () => {
  for (const [name, cmd] of Object.entries(REFUSED)) assert.equal(allowed(cmd), false, name);
});

test('ioctl: terminals, sockets, reflinks, dedupe and file flags pass', () => {
  for (const [name, cmd] of Object.entries(ALLOWED)) assert.equal(allowed(cmd), true, name);
});

test('ioctl: every type and number is decided as the lists say', () => {
  for (let tn = 0; tn < 0x10000; tn++) {
    const type = tn >> 8;
    const nr = tn & 0xff;
    const want = type === 0x94 ? [9, 13, 54].includes(nr) : !(type === 0x58 && [119, 120, 121, 125].includes(nr));
    assert.equal(allowed(BigInt(tn)), want, `type ${type.toString(16)} nr ${nr}`);
  }
});

test('ioctl: direction, size and the upper 32 bits change nothing (the kernel reads the low 32)', () => {
  fc.assert(
    fc.property(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }), (cmd) => allowed(cmd) === allowed(cmd & 0xffffn)),
    { numRuns: 20_000 },
  );
  for (const cmd of [REFUSED.BTRFS_IOC_SUBVOL_CREATE, REFUSED.BTRFS_IOC_SNAP_CREATE, REFUSED.FIFREEZE]) {
    for (const high of [1n, 0xffffffffn, 0x80000000n, 0xdeadbeefn]) assert.equal(allowed(cmd | (high << 32n)), false, `${cmd.toString(16)} | ${high.toString(16)} << 32`);
  }
});
