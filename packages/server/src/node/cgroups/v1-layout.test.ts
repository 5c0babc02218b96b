import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseV1Hierarchies } from './v1-layout.js';

test('v1 hierarchies: the cgroup mounts right under /sys/fs/cgroup, not cgroup2, not elsewhere, not escaped names', () => {
  const mountinfo = [
    '30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755',
    '31 30 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,relatime - cgroup cgroup rw,cpu,cpuacct',
    '34 30 0:31 / /sys/fs/cgroup/memory rw,relatime shared:9 - cgroup cgroup rw,memory',
    '39 30 0:36 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd',
    '40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw',
    '41 22 0:38 / /mnt/cg/memory rw,relatime - cgroup cgroup rw,memory',
    '42 30 0:39 / /sys/fs/cgroup/a\\040b rw,relatime - cgroup cgroup rw,pids',
    '43 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory',
    'garbage',
    '',
  ].join('\n');
  assert.deepEqual(parseV1Hierarchies(mountinfo), ['cpu,cpuacct', 'memory', 'systemd']);
  assert.deepEqual(parseV1Hierarchies('31 30 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n'), [], 'a unified host has none');
});
