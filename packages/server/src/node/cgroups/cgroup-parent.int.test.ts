import { existsSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import { CGROUP_ROOT } from './cgroups.js';

// Where forkd makes the parent itself on a v1 host (cpuset, see cpuset-parent.ts); the unified root elsewhere.
const hierarchy = existsSync(join(CGROUP_ROOT, 'cpuset', 'cpuset.cpus')) ? 'cpuset' : '';

test('a sandboxes\' parent cgroup left 0700 (an older forkd, another umask) is repaired at the start: a fork restores into its user namespace', { skip: !isRoot && 'needs root' }, async () => {
  const cgroupParent = `forkd-test-${randomBytes(4).toString('hex')}`;
  const dir = join(CGROUP_ROOT, hierarchy, cgroupParent);
  await mkdir(dir, { mode: 0o700 });
  assert.equal((await stat(dir)).mode & 0o777, 0o700);
  const node = await createTestNode({ config: { cgroupParent } });
  try {
    assert.equal((await stat(dir)).mode & 0o777, 0o755, 'repaired at the start');
    const s = await node.manager.create({});
    assert.equal((await run(node.manager, s.id, ['sh', '-c', 'echo kept > /tmp/f'])).exitCode, 0);
    const [f] = await node.manager.fork(s.id);
    assert.equal((await run(node.manager, f!.id, ['cat', '/tmp/f'])).stdout, 'kept\n');
  } finally {
    await node.dispose();
  }
});
