import { mkdir, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DoctorReport, type DoctorFinding } from '@forkd/protocol';
import { CGROUP_V1, fakeHost, healthyHost, withFiles, type FakeHostSpec } from './fake-host.js';
import { HOST_CHECKS, runDoctor } from './run-doctor.js';

async function doctor(spec: FakeHostSpec, env: NodeJS.ProcessEnv = {}): Promise<DoctorReport> {
  const h = await fakeHost(spec, env);
  try {
    return DoctorReport.parse(await runDoctor(h.config, { host: h.host, daemonUrl: 'http://127.0.0.1:8080' }));
  } finally {
    await h.dispose();
  }
}

function only(report: DoctorReport, check: string): DoctorFinding {
  const f = report.findings.find((x) => x.check === check);
  assert.ok(f, `no ${check} finding`);
  return f;
}

const GiB = 2 ** 30;

test('a healthy host: every check ok but the daemon (not running: a warning), exit status 0', async () => {
  const r = await doctor(healthyHost());
  assert.deepEqual(r.findings.map((f) => f.check), HOST_CHECKS.map(([id]) => id));
  for (const f of r.findings) assert.equal(f.status, f.check === 'daemon' ? 'warn' : 'ok', `${f.check}: ${f.summary}`);
  assert.deepEqual([r.ok, r.errors, r.warnings], [true, 0, 1]);
  assert.match(only(r, 'cgroups').summary, /cgroup v2 \(memory, cpu, pids\)/);
  assert.match(only(r, 'runc').summary, /runc 1\.3\.3/);
  assert.equal(only(r, 'quota-mode').summary, 'simple quotas');
});

test('forwarding off on the uplink: ok when forkd turns it on at start, a warning naming the uplink and the sysctl when told to leave it', async () => {
  const off = withFiles(healthyHost(), { '/proc/sys/net/ipv4/conf/eth0/forwarding': '0\n' });
  const r = await doctor(off);
  assert.equal(only(r, 'forwarding').status, 'ok');
  assert.match(only(r, 'forwarding').summary, /eth0 does not forward IPv4 now; forkd serve turns it on/);
  const left = await doctor(off, { FORKD_HOST_FORWARDING: 'leave' });
  const f = only(left, 'forwarding');
  assert.equal(f.status, 'warn');
  assert.match(f.summary, /uplink eth0 does not forward IPv4.*FORKD_HOST_FORWARDING=leave/);
  assert.match(f.fix ?? '', /net\.ipv4\.conf\.eth0\.forwarding=1/);
  assert.equal(left.ok, true);
  const none = await doctor(withFiles(healthyHost(), { '/proc/net/route': 'Iface\tDestination\n' }));
  assert.equal(only(none, 'forwarding').status, 'warn');
  assert.match(only(none, 'forwarding').summary, /no IPv4 default route/);
});

test('cgroup moves waiting for RCU: ok when on or when forkd turns favordynmods on at start, a warning with the remount when told to leave it', async () => {
  assert.match(only(await doctor(healthyHost()), 'cgroup-migrations').summary, /\/sys\/fs\/cgroup has favordynmods/);
  const mountinfo = healthyHost().files['/proc/self/mountinfo']!.replace(',favordynmods', '');
  const off = withFiles(healthyHost(), { '/proc/self/mountinfo': mountinfo });
  const r = only(await doctor(off), 'cgroup-migrations');
  assert.equal(r.status, 'ok');
  assert.match(r.summary, /no favordynmods now; forkd serve turns it on at start/);
  const left = only(await doctor(off, { FORKD_CGROUP_FAVORDYNMODS: 'leave' }), 'cgroup-migrations');
  assert.equal(left.status, 'warn');
  assert.match(left.summary, /FORKD_CGROUP_FAVORDYNMODS=leave/);
  assert.equal(left.fix, 'mount -o remount,favordynmods /sys/fs/cgroup, or unset FORKD_CGROUP_FAVORDYNMODS for forkd to do it');
  const old = only(await doctor(withFiles(off, { '/sys/kernel/cgroup/features': 'nsdelegate\n' }), { FORKD_CGROUP_FAVORDYNMODS: 'leave' }), 'cgroup-migrations');
  assert.equal(old.status, 'ok');
  assert.match(old.summary, /no favordynmods \(before 6\.0\)/);
});

test('the staging tmpfs\'s large pages: ok when on or when forkd remounts it at start, a warning with the remount when told to leave it', async () => {
  assert.match(only(await doctor(healthyHost()), 'staging-pages').summary, /\/dev\/shm gives large pages/);
  const mountinfo = healthyHost().files['/proc/self/mountinfo']!.replace(',huge=within_size', '');
  const off = withFiles(healthyHost(), { '/proc/self/mountinfo': mountinfo });
  assert.match(only(await doctor(off), 'staging-pages').summary, /no large pages now; forkd serve remounts it/);
  const left = only(await doctor(off, { FORKD_STAGING_HUGE_PAGES: 'leave' }), 'staging-pages');
  assert.equal(left.status, 'warn');
  assert.equal(left.fix, 'mount -o remount,huge=within_size /dev/shm, or unset FORKD_STAGING_HUGE_PAGES for forkd to do it');
  const deny = withFiles(off, { '/sys/kernel/mm/transparent_hugepage/shmem_enabled': 'always within_size advise never [deny] force\n' });
  assert.match(only(await doctor(deny, { FORKD_STAGING_HUGE_PAGES: 'leave' }), 'staging-pages').summary, /no large pages: each snapshot/);
  const elsewhere = only(await doctor(off, { FORKD_STAGING_DIR: '/var/lib/forkd/staging' }), 'staging-pages');
  assert.equal(elsewhere.status, 'ok');
  assert.match(elsewhere.summary, /is on no tmpfs/);
});

test('a pool made with 16 KiB nodes or two metadata copies: a warning naming the remedy for the loop image, ok for the operator\'s own filesystem', async () => {
  const fsid = healthyHost().files;
  const nodesize = Object.keys(fsid).find((f) => f.endsWith('/nodesize'))!;
  assert.equal(only(await doctor(healthyHost()), 'pool-layout').summary, '8 KiB nodes, one metadata copy');
  const old = withFiles(healthyHost(), { [nodesize]: '16384\n', [nodesize.replace('nodesize', 'allocation/metadata/dup/total_bytes')]: '0\n' });
  const f = only(await doctor(old), 'pool-layout');
  assert.equal(f.status, 'warn');
  assert.match(f.summary, /^16 KiB nodes, two metadata copies: .*made before/);
  assert.match(f.fix ?? '', /remove \/var\/lib\/forkd\/pool\.img/);
  const own = only(await doctor(old, { FORKD_POOL: '/var/lib/forkd/pool' }), 'pool-layout');
  assert.equal(own.status, 'ok');
  assert.match(own.summary, /FORKD_POOL is the operator's filesystem/);
});

test('a missing loop device blocks the loop-image pool (error, exit status 1); with FORKD_POOL it is not needed', async () => {
  const spec = withFiles(healthyHost(), { '/dev/loop-control': undefined });
  const r = await doctor(spec);
  const f = only(r, 'loop-devices');
  assert.equal(f.status, 'error');
  assert.match(f.summary, /no loop devices.*pool\.img/);
  assert.match(f.fix ?? '', /modprobe loop/);
  assert.deepEqual([r.ok, r.errors], [false, 1]);
  const own = await doctor(spec, { FORKD_POOL: '/var/lib/forkd/pool' });
  assert.equal(only(own, 'loop-devices').status, 'skip');
  assert.equal(only(own, 'pool').status, 'ok');
});

test('a full pool is an error at the refusal threshold, a warning below twice it', async () => {
  const full = await doctor({ ...healthyHost(), space: { sizeBytes: 64 * GiB, freeBytes: 1 * GiB } });
  const f = only(full, 'pool-space');
  assert.equal(f.status, 'error');
  assert.match(f.summary, /the pool is full: 1\.0 GiB free of 64\.0 GiB.*below 3\.2 GiB/);
  assert.match(f.fix ?? '', /forkd rm/);
  assert.equal(full.ok, false);
  assert.equal(only(await doctor({ ...healthyHost(), space: { sizeBytes: 64 * GiB, freeBytes: 5 * GiB } }), 'pool-space').status, 'warn');
  // FORKD_POOL_MIN_FREE_MB is the same threshold the daemon refuses at.
  assert.equal(only(await doctor({ ...healthyHost(), space: { sizeBytes: 64 * GiB, freeBytes: 5 * GiB } }, { FORKD_POOL_MIN_FREE_MB: '8192' }), 'pool-space').status, 'error');
});

test('pool not mounted: space and quotas skipped; no image yet: a warning; not Btrfs: an error', async () => {
  const unmounted = await doctor(withFiles(healthyHost(), { '/proc/self/mountinfo': '22 1 8:1 / / rw - ext4 /dev/sda1 rw\n' }));
  assert.equal(only(unmounted, 'pool').status, 'ok');
  assert.match(only(unmounted, 'pool').summary, /not mounted now/);
  assert.equal(only(unmounted, 'pool-space').status, 'skip');
  assert.equal(only(unmounted, 'quota-mode').status, 'skip');
  const none = await doctor(withFiles(healthyHost(), { '/proc/self/mountinfo': '22 1 8:1 / / rw - ext4 /dev/sda1 rw\n', '/var/lib/forkd/pool.img': undefined }));
  assert.equal(only(none, 'pool').status, 'warn');
  const ext4 = await doctor(healthyHost(), { FORKD_POOL: '/srv/data' });
  assert.equal(only(ext4, 'pool').status, 'error');
  assert.match(only(ext4, 'pool').summary, /not on Btrfs \(ext4\)/);
});

test('the sandboxes\' parent cgroup: every level searchable from a user namespace, in every hierarchy; one that is not is a warning naming it', async () => {
  const made = await doctor({ ...healthyHost(), dirs: { '/sys/fs/cgroup/forkd': 0o755 } });
  assert.equal(only(made, 'cgroup-parent').status, 'ok');
  const closed = only(await doctor({ ...healthyHost(), dirs: { '/sys/fs/cgroup/forkd': 0o700 } }), 'cgroup-parent');
  assert.equal(closed.status, 'warn');
  assert.match(closed.summary, /\/sys\/fs\/cgroup\/forkd\)/);
  assert.match(closed.fix ?? '', /chmod 755 \/sys\/fs\/cgroup\/forkd/);
  // v1: the hierarchies mountinfo names (a hybrid's unified too), each level of a nested parent.
  const mounts = ['memory', 'pids'].map((c, i) => `${30 + i} 25 0:${30 + i} / /sys/fs/cgroup/${c} rw - cgroup cgroup rw,${c}\n`).join('');
  const v1 = { ...withFiles(healthyHost(), { ...CGROUP_V1, '/proc/self/mountinfo': `22 1 8:1 / / rw - ext4 /dev/sda1 rw\n25 22 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n${mounts}` }) };
  const nested = { FORKD_CGROUP_PARENT: 'a/forkd' };
  const open = { '/sys/fs/cgroup/memory/a/forkd': 0o755, '/sys/fs/cgroup/pids/a/forkd': 0o755, '/sys/fs/cgroup/unified/a/forkd': 0o755 };
  assert.equal(only(await doctor({ ...v1, dirs: open }, nested), 'cgroup-parent').status, 'ok');
  const deep = only(await doctor({ ...v1, dirs: { ...open, '/sys/fs/cgroup/pids/a/forkd': 0o711, '/sys/fs/cgroup/unified/a': 0o700 } }, nested), 'cgroup-parent');
  assert.equal(deep.status, 'warn');
  assert.match(deep.summary, /^2 levels .*\(\/sys\/fs\/cgroup\/pids\/a\/forkd, \/sys\/fs\/cgroup\/unified\/a\)/);
});

test('cgroup v1 and v2: each with its controllers; one missing is an error; v1 without swap accounting a warning', async () => {
  const v1 = await doctor(withFiles(healthyHost(), CGROUP_V1));
  assert.equal(only(v1, 'cgroups').status, 'ok');
  assert.match(only(v1, 'cgroups').summary, /cgroup v1 \(memory, cpu, cpuacct, pids, freezer\)/);
  const noFreezer = await doctor(withFiles(healthyHost(), { ...CGROUP_V1, '/sys/fs/cgroup/freezer/tasks': undefined }));
  assert.equal(only(noFreezer, 'cgroups').status, 'error');
  assert.match(only(noFreezer, 'cgroups').summary, /v1 without the freezer controller/);
  const noSwap = await doctor(withFiles(healthyHost(), { ...CGROUP_V1, '/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes': undefined, '/sys/fs/cgroup/memory/tasks': '' }));
  assert.equal(only(noSwap, 'cgroups').status, 'warn');
  assert.match(only(noSwap, 'cgroups').fix ?? '', /swapaccount=1/);
  const v2 = await doctor(withFiles(healthyHost(), { '/sys/fs/cgroup/cgroup.controllers': 'cpuset cpu io memory\n' }));
  assert.equal(only(v2, 'cgroups').status, 'error');
  assert.match(only(v2, 'cgroups').summary, /v2 without the pids controller/);
});

test('an old kernel: the kernel and idmapped mounts are errors; no /dev/userfaultfd a warning', async () => {
  const r = await doctor(withFiles(healthyHost(), { '/proc/sys/kernel/osrelease': '5.10.0-30-amd64\n', '/dev/userfaultfd': undefined }));
  assert.equal(only(r, 'kernel').status, 'error');
  assert.match(only(r, 'kernel').summary, /Linux 5\.10\.0-30-amd64 is older than 5\.15/);
  assert.equal(only(r, 'idmapped-mounts').status, 'error');
  assert.equal(only(r, 'userfaultfd').status, 'warn');
  assert.match(only(r, 'userfaultfd').summary, /restores load all memory first/);
  assert.equal(only(await doctor(withFiles(healthyHost(), { '/dev/userfaultfd': undefined, '/proc/sys/vm/unprivileged_userfaultfd': '1\n' })), 'userfaultfd').status, 'warn');
  assert.equal(only(await doctor(healthyHost(), { FORKD_LAZY_RESTORE: '0' }), 'userfaultfd').status, 'skip');
});

test('user namespaces off, no seccomp, no Btrfs: errors', async () => {
  const r = await doctor(withFiles(healthyHost(), { '/proc/sys/user/max_user_namespaces': '0\n', '/proc/sys/kernel/seccomp/actions_avail': undefined, '/proc/filesystems': 'nodev\tproc\n\text4\n' }));
  for (const c of ['user-namespaces', 'seccomp', 'btrfs']) assert.equal(only(r, c).status, 'error', c);
  assert.match(only(r, 'user-namespaces').fix ?? '', /user\.max_user_namespaces/);
  assert.equal(only(await doctor(healthyHost(), { FORKD_USERNS: '0' }), 'user-namespaces').status, 'warn');
  // Btrfs as a module not loaded yet is fine: the pool's mount loads it.
  const mod = await doctor(withFiles(healthyHost(), { '/proc/filesystems': '\text4\n', '/lib/modules/6.12.38+deb13-amd64/kernel/fs/btrfs/btrfs.ko.xz': '' }));
  assert.equal(only(mod, 'btrfs').status, 'ok');
});

test('runc open to the 2025 CVEs is refused as setup refuses it; old or missing CRIU, missing runc: errors; unreadable: skipped', async () => {
  const tools = (runc: string, criu: string): FakeHostSpec => ({ ...healthyHost(), tools: { runc: { kind: 'ran', stdout: runc }, criu: { kind: 'ran', stdout: criu } } });
  const r = await doctor(tools('runc version 1.3.2\n', 'Version: 4.1\n'));
  assert.equal(only(r, 'runc').status, 'error');
  assert.match(only(r, 'runc').summary, /CVE-2025-31133/);
  assert.equal(only(r, 'criu').status, 'error');
  assert.match(only(r, 'criu').summary, /CRIU 4\.1 is older than 4\.2/);
  assert.equal(only(await doctor(tools('runc version 1.2.8\n', 'Version: 4.2\n')), 'runc').status, 'ok');
  const missing = await doctor({ ...healthyHost(), tools: {} });
  assert.equal(only(missing, 'runc').status, 'error');
  assert.match(only(missing, 'runc').fix ?? '', /forkd setup/);
  const denied = await doctor({ ...healthyHost(), tools: { runc: { kind: 'denied' }, criu: { kind: 'denied' } } });
  assert.equal(only(denied, 'runc').status, 'skip');
  assert.match(only(denied, 'criu').fix ?? '', /as root/);
});

test('quota mode: off is a warning, full qgroups where the kernel has no simple quotas a warning', async () => {
  const fsid = '/sys/fs/btrfs/9592cd38-1246-40cb-94dd-abc8cf7c7cdc/qgroups';
  assert.equal(only(await doctor(withFiles(healthyHost(), { [`${fsid}/enabled`]: '0\n' })), 'quota-mode').status, 'warn');
  const full = withFiles(healthyHost(), { [`${fsid}/mode`]: 'qgroup\n' });
  assert.match(only(await doctor(full), 'quota-mode').summary, /switched to simple quotas at the next start/);
  assert.equal(only(await doctor(full, { FORKD_QUOTA_MODE: 'full' }), 'quota-mode').status, 'ok');
  assert.equal(only(await doctor(withFiles(full, { '/sys/fs/btrfs/features/simple_quota': undefined })), 'quota-mode').status, 'warn');
});

test('quota mode of a pool on device-mapper: found by the device link\'s kernel name', async () => {
  const fsid = '/sys/fs/btrfs/9592cd38-1246-40cb-94dd-abc8cf7c7cdc';
  const spec = withFiles(healthyHost(), {
    '/proc/self/mountinfo': '22 1 8:1 / / rw - ext4 /dev/sda1 rw\n47 22 0:41 / /srv/pool rw - btrfs /dev/mapper/vg-pool rw\n',
    [`${fsid}/devices/loop0`]: undefined,
    [`${fsid}/devices/dm-3`]: '',
    '/dev/dm-3': '',
  });
  const h = await fakeHost(spec, { FORKD_POOL: '/srv/pool' });
  try {
    await mkdir(join(h.host.root, 'dev/mapper'), { recursive: true });
    await symlink('../dm-3', join(h.host.root, 'dev/mapper/vg-pool'));
    const r = await runDoctor(h.config, { host: h.host, daemonUrl: 'http://127.0.0.1:8080' });
    assert.equal(only(r, 'quota-mode').summary, 'simple quotas');
    assert.equal(only(r, 'pool').status, 'ok');
  } finally {
    await h.dispose();
  }
});

const LISTEN_8080_ANY = '   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 100 0 0 10 0\n';

test('ports: held by another program is an error, by the healthy forkd ok; the daemon: down a warning, unhealthy or foreign an error', async () => {
  const busy = withFiles(healthyHost(), { '/proc/net/tcp': healthyHost().files['/proc/net/tcp'] + LISTEN_8080_ANY });
  const r = await doctor(busy);
  assert.equal(only(r, 'ports').status, 'error');
  assert.match(only(r, 'ports').summary, /8080 \(FORKD_PORT\) in use by another program/);
  const up = await doctor({ ...busy, health: { kind: 'healthy' } });
  assert.equal(only(up, 'ports').status, 'ok');
  assert.equal(only(up, 'daemon').status, 'ok');
  assert.equal(only(await doctor(busy, { FORKD_PORT: '8081' }), 'ports').status, 'ok');
  assert.equal(only(await doctor({ ...healthyHost(), health: { kind: 'unhealthy', detail: 'UNAVAILABLE' } }), 'daemon').status, 'error');
  assert.equal(only(await doctor({ ...healthyHost(), health: { kind: 'foreign', detail: 'HTTP 404' } }), 'daemon').status, 'error');
});

test('clock: a sync daemon running is ok, none a warning', async () => {
  const none = withFiles(healthyHost(), { '/run/systemd/timesync/synchronized': undefined, '/proc/1/comm': 'init\n' });
  assert.equal(only(await doctor(none), 'clock').status, 'warn');
  const chrony = await doctor(withFiles(none, { '/proc/412/comm': 'chronyd\n' }));
  assert.equal(only(chrony, 'clock').summary, 'chronyd keeps it synchronized');
});

test('a check that throws is an error finding; the others still run', async () => {
  const h = await fakeHost(healthyHost());
  try {
    const r = await runDoctor(h.config, { host: { ...h.host, health: () => Promise.reject(new Error('boom')) }, daemonUrl: 'http://127.0.0.1:8080' });
    assert.equal(only(r, 'daemon').status, 'error');
    assert.match(only(r, 'daemon').summary, /the check failed: boom/);
    assert.equal(r.findings.length, HOST_CHECKS.length);
  } finally {
    await h.dispose();
  }
});
