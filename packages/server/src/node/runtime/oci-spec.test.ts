import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildOciSpec, DEFAULT_CAPS } from './oci-spec.js';
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
  // /dev is the runtime's own, fresh at every start (never the root's, which a template shapes); CRIU
  // archives each tmpfs at every dump and restore, so it is the only one (/dev/shm is a directory of it).
  assert.deepEqual(c.mounts.filter((m: { type: string }) => m.type === 'tmpfs').map((m: { destination: string }) => m.destination), ['/dev']);
  assert.ok(c.mounts.findIndex((m: { destination: string }) => m.destination === '/dev') < c.mounts.findIndex((m: { destination: string }) => m.destination === '/dev/pts'), '/dev before what is mounted on it');
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
