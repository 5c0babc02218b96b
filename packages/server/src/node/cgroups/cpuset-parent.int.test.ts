import { existsSync } from 'node:fs';
import { mkdir, readFile, rmdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isRoot } from '../../testing/test-node.js';
import { CGROUP_ROOT } from './cgroups.js';
import { cloneCpusetToChildren } from './cpuset-parent.js';

const cpuset = join(CGROUP_ROOT, 'cpuset');
const skip = (!isRoot && 'needs root') || (!existsSync(join(cpuset, 'cpuset.cpus')) && 'no cgroup v1 cpuset hierarchy here');

test('a parent two levels deep gets CPUs and memory nodes at each level, and a child made in it starts with them, nothing written', { skip }, async () => {
  const top = `forkd-test-cpuset-${process.pid}`;
  const parent = `${top}/sandboxes`;
  const umask = process.umask(0o077); // the daemon's
  try {
    assert.equal(await cloneCpusetToChildren(parent), true);
    const want = (f: string) => readFile(join(cpuset, f), 'utf8');
    for (const level of [top, parent]) {
      assert.equal(await readFile(join(cpuset, level, 'cpuset.cpus'), 'utf8'), await want('cpuset.cpus'));
      assert.equal(await readFile(join(cpuset, level, 'cpuset.mems'), 'utf8'), await want('cpuset.mems'));
    }
    assert.equal((await readFile(join(cpuset, parent, 'cgroup.clone_children'), 'utf8')).trim(), '1');
    for (const level of [top, parent]) assert.equal((await stat(join(cpuset, level))).mode & 0o777, 0o755, 'searchable from a sandbox, whatever the umask');
    await mkdir(join(cpuset, parent, 'child'));
    assert.equal(await readFile(join(cpuset, parent, 'child', 'cpuset.cpus'), 'utf8'), await want('cpuset.cpus'));
    assert.equal(await cloneCpusetToChildren(parent), true, 'again: nothing to do, no error');
  } finally {
    process.umask(umask);
    for (const d of [`${parent}/child`, parent, top]) await rmdir(join(cpuset, d)).catch(() => {});
  }
});

test('a host without a v1 cpuset hierarchy is left alone', { skip: !isRoot && 'needs root' }, async () => {
  assert.equal(await cloneCpusetToChildren('forkd-x', '/nonexistent-cgroup-root'), false);
});
