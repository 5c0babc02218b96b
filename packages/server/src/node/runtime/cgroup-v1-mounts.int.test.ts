import { readdir } from 'node:fs/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../../shared/exec.js';
import { run } from '../../testing/helpers.js';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { cgroupVersion } from '../cgroups/cgroups.js';

/** The snapshot's CRIU images (in the pool once stored). */
async function imageFiles(node: TestNode, snapId: string): Promise<string[]> {
  await node.manager.settled();
  const r = await exec('find', [node.dir, '-type', 'd', '-path', `*/${snapId}/memory`]);
  const dir = r.stdout.split('\n').find(Boolean);
  assert.ok(dir, `memory images of ${snapId}`);
  return readdir(dir);
}

const MOUNTS = "awk '$5 ~ \"^/sys/fs/cgroup\" {print $5, $6, $(NF-2)}' /proc/self/mountinfo";

/**
 * On a cgroup v1 host /sys/fs/cgroup is read-only binds of the sandbox's own cgroups, not runc's tmpfs
 * (oci-spec.ts cgroupMounts): CRIU archives no tmpfs for it at a dump, and each restore binds the new
 * sandbox's own cgroups.
 */
describe('cgroup v1: /sys/fs/cgroup as binds', { skip: (!isRoot && 'needs root') || (cgroupVersion() !== 1 && 'a cgroup v2 host: one cgroup mount, as runc makes it') }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
  });
  after(() => node?.dispose());

  test('a sandbox reads its own limits there, cannot write them, and its snapshot archives no tmpfs; a fork reads its own', async () => {
    const m = node.manager;
    const s = await m.create({ memoryMb: 200 });
    const mounts = (await run(m, s.id, ['sh', '-c', MOUNTS])).stdout.trim().split('\n');
    assert.ok(mounts.length >= 3, mounts.join('\n'));
    assert.deepEqual(mounts.filter((l) => l.split(' ')[2] === 'tmpfs'), [], 'no tmpfs');
    for (const l of mounts) assert.match(l, /^\S+ ro,/, l);
    assert.ok(mounts.some((l) => l.startsWith('/sys/fs/cgroup/memory ') && l.endsWith(' cgroup')), mounts.join('\n'));
    const limit = 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes';
    assert.equal((await run(m, s.id, ['sh', '-c', limit])).stdout.trim(), String(200 * 2 ** 20));
    for (const cmd of ['echo 1000000 > /sys/fs/cgroup/memory/memory.limit_in_bytes', 'mkdir /sys/fs/cgroup/x', 'mkdir /sys/fs/cgroup/memory/x']) {
      assert.equal((await run(m, s.id, ['sh', '-c', `${cmd} 2>/dev/null || echo refused`])).stdout.trim(), 'refused', cmd);
    }
    const snap = await m.snapshot(s.id);
    const tmpfsArchives = (await imageFiles(node, snap.id)).filter((f) => f.startsWith('tmpfs-'));
    // Nor /dev's, which is a directory of the root (oci-spec.ts devMounts).
    assert.deepEqual(tmpfsArchives, []);
    const [f] = await m.fork(snap.id);
    assert.ok(f);
    assert.equal((await run(m, f.id, ['sh', '-c', limit])).stdout.trim(), String(200 * 2 ** 20));
    // Its own cgroup, not the source's: the processes there are the fork's (another cgroup's would read
    // as pid 0 from this pid namespace), its init among them.
    for (const id of [f.id, s.id]) {
      const procs = (await run(m, id, ['cat', '/sys/fs/cgroup/pids/cgroup.procs'])).stdout.trim().split('\n');
      assert.ok(procs.includes('1') && !procs.includes('0'), `${id}: ${procs.join(' ')}`);
    }
    assert.deepEqual((await run(m, f.id, ['sh', '-c', MOUNTS])).stdout.trim().split('\n'), mounts);
  });
});
