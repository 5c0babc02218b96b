import { chmod, mkdir, mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { searchableCgroupParents } from './cgroup-parent.js';

test('cgroup parent: each unsearchable level is made 0755 in every hierarchy where it exists; searchable ones and others are left', async () => {
  const root = await mkdtemp(join(tmpdir(), 'forkd-cgparent-'));
  try {
    await mkdir(join(root, 'cpuset', 'forkd', 'sandboxes'), { recursive: true });
    await mkdir(join(root, 'memory', 'forkd'), { recursive: true });
    await chmod(join(root, 'cpuset', 'forkd'), 0o700);
    await chmod(join(root, 'cpuset', 'forkd', 'sandboxes'), 0o750);
    await chmod(join(root, 'memory', 'forkd'), 0o775);
    const changed = await searchableCgroupParents('forkd/sandboxes', ['cpuset', 'memory', 'pids'], root);
    assert.deepEqual(changed, [join(root, 'cpuset', 'forkd'), join(root, 'cpuset', 'forkd', 'sandboxes')]);
    for (const d of ['cpuset/forkd', 'cpuset/forkd/sandboxes']) assert.equal((await stat(join(root, d))).mode & 0o777, 0o755, d);
    assert.equal((await stat(join(root, 'memory', 'forkd'))).mode & 0o777, 0o775, 'searchable already: left as it is');
    assert.deepEqual(await searchableCgroupParents('forkd/sandboxes', ['cpuset', 'memory', 'pids'], root), [], 'again: nothing to do');
    // A unified root: the levels are right under it.
    await mkdir(join(root, 'u'), { mode: 0o700 });
    assert.deepEqual(await searchableCgroupParents('u', [''], root), [join(root, 'u')]);
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});
