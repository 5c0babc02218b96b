import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildOciSpec, DEFAULT_CAPS, DEV_MOUNT_POINTS } from './oci-spec.js';
import { seccompProfile } from './seccomp-profile.js';

const spec = { rootfs: '/pool/sandboxes/sbx-1', hostname: 'sbx-1', limits: { memoryMb: 256, cpus: 1.5, pids: 100 }, init: '/.forkd/init', env: {} };

test('isolation: namespaces, limits, capabilities, seccomp', () => {
  const c = buildOciSpec(spec, { cgroupsPath: '/forkd/sbx-1', swapLimit: true, emptyDir: '/var/lib/forkd/bundles/.empty' }) as any;
  assert.deepEqual(c.linux.namespaces.map((n: { type: string }) => n.type).sort(), ['cgroup', 'ipc', 'mount', 'network', 'pid', 'uts']);
  assert.equal(c.linux.resources.memory.limit, 256 * 1024 * 1024);
  assert.equal(c.linux.resources.memory.swap, 256 * 1024 * 1024);
  assert.equal(c.linux.resources.cpu.quota, 150_000);
  assert.equal(c.linux.resources.pids.limit, 100);
  assert.equal(c.hostname, 'sbx-1');
  assert.ok(!DEFAULT_CAPS.includes('CAP_SYS_ADMIN'));
  assert.deepEqual(c.process.capabilities.bounding, DEFAULT_CAPS);
  assert.deepEqual(c.linux.seccomp, seccompProfile(), 'the default-deny profile (seccomp-profile.test.ts)');
  const binds = c.mounts.filter((m: { type: string }) => m.type === 'bind');
  assert.deepEqual(binds.map((m: { source: string; options: string[] }) => [m.source, m.options.includes('ro')]), [['/var/lib/forkd/bundles/.empty', true]], 'no host path but an empty read-only directory is bind-mounted');
  assert.ok(!c.linux.maskedPaths.includes('/sys/firmware'));
  assert.equal(c.linux.namespaces.find((n: { type: string }) => n.type === 'network').path, undefined);
  const joined = buildOciSpec(spec, { cgroupsPath: '/forkd/sbx-1', swapLimit: true, netns: '/run/forkd/netns/sbx-1', emptyDir: '/e' }) as any;
  assert.equal(joined.linux.namespaces.find((n: { type: string }) => n.type === 'network').path, '/run/forkd/netns/sbx-1', 'joins the host-made namespace');
});

test('rlimits are passed through; none without', () => {
  const rlimits = [{ type: 'RLIMIT_CORE' as const, soft: 0, hard: 0 }];
  assert.deepEqual((buildOciSpec(spec, { cgroupsPath: '/f', swapLimit: true, emptyDir: '/e', rlimits }) as any).process.rlimits, rlimits);
  assert.equal((buildOciSpec(spec, { cgroupsPath: '/f', swapLimit: true, emptyDir: '/e' }) as any).process.rlimits, undefined);
});

test('no swap limit where the host has no swap accounting', () => {
  const c = buildOciSpec(spec, { cgroupsPath: '/forkd/sbx-1', swapLimit: false, emptyDir: '/e' }) as any;
  assert.equal(c.linux.resources.memory.swap, undefined);
});

test('/sys/fs/cgroup: one cgroup mount on v2; on v1 read-only binds (no tmpfs for CRIU to archive), each of the sandbox\'s own cgroup', () => {
  const v2 = buildOciSpec(spec, { cgroupsPath: '/forkd/sbx-1', swapLimit: true, emptyDir: '/e' }) as any;
  assert.deepEqual(
    v2.mounts.filter((m: { destination: string }) => m.destination.startsWith('/sys/fs/cgroup')).map((m: { type: string }) => m.type),
    ['cgroup'],
  );
  const v1 = buildOciSpec(spec, { cgroupsPath: '/forkd/sbx-1', swapLimit: true, emptyDir: '/e', cgroupV1: { skeleton: '/run/roots/.cgroup-v1', hierarchies: ['memory', 'cpu,cpuacct', 'name=x'] } }) as any;
  const cg = v1.mounts.filter((m: { destination: string }) => m.destination.startsWith('/sys/fs/cgroup'));
  assert.deepEqual(
    cg.map((m: { destination: string; type: string; source: string }) => [m.destination, m.type, m.source]),
    [
      ['/sys/fs/cgroup', 'bind', '/run/roots/.cgroup-v1'],
      ['/sys/fs/cgroup/memory', 'bind', '/sys/fs/cgroup/memory/forkd/sbx-1'],
      ['/sys/fs/cgroup/cpu,cpuacct', 'bind', '/sys/fs/cgroup/cpu,cpuacct/forkd/sbx-1'],
      ['/sys/fs/cgroup/name=x', 'bind', '/sys/fs/cgroup/name=x/forkd/sbx-1'],
    ],
  );
  for (const m of cg) {
    assert.ok(m.options.includes('ro') && m.options.includes('bind') && !m.options.includes('rbind'), m.destination);
    for (const o of ['nosuid', 'noexec', 'nodev']) assert.ok(m.options.includes(o), `${m.destination} ${o}`);
  }
  assert.ok(v1.mounts.findIndex((m: { destination: string }) => m.destination === '/sys') < v1.mounts.indexOf(cg[0]), '/sys before what is mounted on it');
  assert.deepEqual(v1.mounts.filter((m: { type: string }) => m.type === 'tmpfs').map((m: { destination: string }) => m.destination), ['/dev']);
});

test('/dev: in a user namespace the root\'s own directory bound over itself, with the host\'s device nodes bound in (no tmpfs for CRIU to archive); otherwise, or with the lever off, a tmpfs before what is mounted on it', () => {
  const tmpfsOf = (c: any) => c.mounts.filter((m: { type: string }) => m.type === 'tmpfs').map((m: { destination: string }) => m.destination);
  const inUserns = { ...spec, idmap: { hostId: 100_000, size: 65_536 } };
  const inRoot = buildOciSpec(inUserns, { cgroupsPath: '/f', swapLimit: true, emptyDir: '/e', devInRoot: true }) as any;
  assert.deepEqual(tmpfsOf(inRoot), [], 'no tmpfs at all: CRIU archives each one at every dump and restore');
  const devs = inRoot.mounts.filter((m: { destination: string }) => m.destination === '/dev' || m.destination.startsWith('/dev/'));
  assert.deepEqual(
    devs.map((m: { destination: string; type: string; source: string }) => [m.destination, m.type, m.source]),
    [
      ['/dev', 'bind', '/pool/sandboxes/sbx-1/dev'],
      ...['null', 'zero', 'full', 'random', 'urandom', 'tty'].map((d) => [`/dev/${d}`, 'bind', `/dev/${d}`]),
      ['/dev/pts', 'devpts', 'devpts'],
      ['/dev/mqueue', 'mqueue', 'mqueue'],
    ],
    'a mount point (never renamed away), its devices the host\'s, devpts and mqueue still their own',
  );
  const tmpfs = buildOciSpec(inUserns, { cgroupsPath: '/f', swapLimit: true, emptyDir: '/e' }) as any;
  assert.deepEqual(tmpfsOf(tmpfs), ['/dev'], 'the only tmpfs: /dev/shm is a directory of it');
  assert.ok(tmpfs.mounts.findIndex((m: { destination: string }) => m.destination === '/dev') < tmpfs.mounts.findIndex((m: { destination: string }) => m.destination === '/dev/pts'), '/dev before what is mounted on it');
  assert.ok(!tmpfs.mounts.some((m: { destination: string }) => m.destination === '/dev/null'), 'runc makes the devices in its own /dev');
  const noUserns = buildOciSpec(spec, { cgroupsPath: '/f', swapLimit: true, emptyDir: '/e', devInRoot: true }) as any;
  assert.deepEqual(tmpfsOf(noUserns), ['/dev'], 'without a user namespace: the tmpfs');
});

test('every mount point under /dev a restore binds onto is made real first', () => {
  const made = new Map(DEV_MOUNT_POINTS.map(([p, k]) => [`/${p}`, k]));
  const spec0 = buildOciSpec({ ...spec, idmap: { hostId: 100_000, size: 65_536 } }, { cgroupsPath: '/f', swapLimit: true, emptyDir: '/e', devInRoot: true }) as any;
  for (const m of spec0.mounts as { destination: string; type: string }[]) {
    if (m.destination.startsWith('/dev/')) assert.equal(made.get(m.destination), m.type === 'bind' ? 'file' : 'dir', m.destination);
  }
  for (const d of ['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/tty']) assert.equal(made.get(d), 'file', `${d}: one of runc's default devices`);
  assert.equal(DEV_MOUNT_POINTS[0]?.[0], 'dev', '/dev itself first');
});

test('a restore into a namespace CRIU makes brings its loopback up with a createRuntime hook; nothing else has hooks', () => {
  const base = { cgroupsPath: '/f', swapLimit: true, emptyDir: '/e' };
  const hooked = buildOciSpec(spec, { ...base, loopbackHook: '/cache/bin/criu-action' }) as any;
  assert.deepEqual(hooked.hooks, { createRuntime: [{ path: '/cache/bin/criu-action', env: ['CRTOOLS_SCRIPT_ACTION=setup-namespaces'], timeout: 30 }] });
  assert.equal((buildOciSpec(spec, base) as any).hooks, undefined);
});
