import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { cloneCpusetToChildren } from './cpuset-parent.js';

// A plain directory tree in place of /sys/fs/cgroup: the kernel's files are made by hand, so a new level starts empty.
test("cpuset parent: each empty level copies its parent's CPUs and nodes, a set one is kept, the last clones to children", async () => {
  const root = await mkdtemp(join(tmpdir(), 'forkd-cpuset-'));
  const umask = process.umask(0o077);
  try {
    const top = join(root, 'cpuset');
    await mkdir(top);
    await writeFile(join(top, 'cpuset.cpus'), '0-1\n');
    await writeFile(join(top, 'cpuset.mems'), '0\n');
    for (const level of ['forkd', 'forkd/sandboxes']) {
      await mkdir(join(top, level), { recursive: true });
      await writeFile(join(top, level, 'cpuset.cpus'), level === 'forkd' ? '1\n' : '');
      await writeFile(join(top, level, 'cpuset.mems'), '');
    }
    assert.equal(await cloneCpusetToChildren('forkd/sandboxes', root), true);
    assert.equal(await readFile(join(top, 'forkd/cpuset.cpus'), 'utf8'), '1\n', 'set by an operator: kept');
    assert.equal(await readFile(join(top, 'forkd/sandboxes/cpuset.cpus'), 'utf8'), '1\n', 'from the level above, not the top');
    assert.equal(await readFile(join(top, 'forkd/sandboxes/cpuset.mems'), 'utf8'), '0\n');
    assert.equal(await readFile(join(top, 'forkd/sandboxes/cgroup.clone_children'), 'utf8'), '1');
    assert.equal(await readFile(join(top, 'forkd/cgroup.clone_children'), 'utf8').catch(() => 'none'), 'none', 'only the parent clones');
    assert.equal(await cloneCpusetToChildren('forkd/sandboxes', root), true, 'again: no error');
  } finally {
    process.umask(umask);
    await rm(root, { recursive: true, force: true });
  }
});

test('cpuset parent: a new level is made searchable whatever the umask; a root without cpuset is left alone', async () => {
  const root = await mkdtemp(join(tmpdir(), 'forkd-cpuset-'));
  const umask = process.umask(0o077);
  try {
    assert.equal(await cloneCpusetToChildren('forkd', root), false);
    await mkdir(join(root, 'cpuset'));
    await writeFile(join(root, 'cpuset', 'cpuset.cpus'), '0\n');
    await writeFile(join(root, 'cpuset', 'cpuset.mems'), '0\n');
    // A plain mkdir makes no cpuset files: the first read of the new level's fails, as the kernel's never would.
    await assert.rejects(cloneCpusetToChildren('a/b', root), { code: 'ENOENT' });
    assert.equal((await stat(join(root, 'cpuset', 'a'))).mode & 0o777, 0o755);
    assert.equal((await stat(join(root, 'cpuset', 'a', 'b'))).mode & 0o777, 0o755);
  } finally {
    process.umask(umask);
    await rm(root, { recursive: true, force: true });
  }
});
