import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mountOf, parseMountinfo, unescapeMount } from './mountinfo.js';

test('mountinfo: optional fields skipped, paths unescaped, options split', () => {
  const text = [
    '22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw,errors=remount-ro',
    '46 22 0:40 / /var/lib/forkd/pool rw,nodev,noatime shared:20 master:3 - btrfs /dev/loop0 rw,compress=zstd:1',
    '50 22 0:41 /sub /srv/my\\040pool rw - btrfs /dev/mapper/vg\\134x rw',
    '',
  ].join('\n');
  assert.deepEqual(parseMountinfo(text), [
    { mountPoint: '/', options: ['rw', 'relatime'], fstype: 'ext4', source: '/dev/sda1', superOptions: ['rw', 'errors=remount-ro'] },
    { mountPoint: '/var/lib/forkd/pool', options: ['rw', 'nodev', 'noatime'], fstype: 'btrfs', source: '/dev/loop0', superOptions: ['rw', 'compress=zstd:1'] },
    { mountPoint: '/srv/my pool', options: ['rw'], fstype: 'btrfs', source: '/dev/mapper/vg\\x', superOptions: ['rw'] },
  ]);
});

test('mountinfo: short or broken lines are skipped, not thrown on', () => {
  for (const line of ['1 2 0:3 / - cgroup2', '1 2 0:3 / /x rw', '1 2 0:3 / /x rw -', '1 2 0:3 / /x rw - btrfs', '1 2 0:3 / /x rw - btrfs src', '-', ' - - - - - -', '\u0000\u0001']) {
    assert.deepEqual(parseMountinfo(line), [], JSON.stringify(line));
  }
  // A mount point named "-" is a path, not the separator.
  assert.equal(parseMountinfo('1 2 0:3 / - rw - tmpfs none rw')[0]?.mountPoint, '-');
});

test('unescapeMount: octal escapes only', () => {
  assert.equal(unescapeMount('a\\040b\\011c\\012d\\134e'), 'a b\tc\nd\\e');
  assert.equal(unescapeMount('a\\9b\\04'), 'a\\9b\\04');
});

const MOUNTINFO = [
  '22 1 254:0 / / rw,relatime - ext4 /dev/vda rw',
  '23 22 0:5 / /dev rw,nosuid - devtmpfs devtmpfs rw,size=4096k',
  '24 23 0:22 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683748k',
  '29 24 0:26 / /dev/shm rw,relatime - tmpfs tmpfs rw,size=24683748k,huge=within_size',
  '30 22 0:27 / /dev/shmx rw - tmpfs tmpfs rw',
  '31 22 0:28 / /run/a\\040b rw - tmpfs tmpfs rw,huge=never',
].join('\n');

test('mountOf: the longest mount point above the path, the topmost of a stack; never a name that only starts alike', () => {
  const mounts = parseMountinfo(MOUNTINFO);
  const at = (p: string) => {
    const m = mountOf(mounts, p);
    return m && `${m.mountPoint} ${m.superOptions.join(',')}`;
  };
  assert.equal(at('/dev/shm/forkd'), '/dev/shm rw,size=24683748k,huge=within_size');
  assert.equal(at('/dev/shm'), '/dev/shm rw,size=24683748k,huge=within_size');
  assert.equal(at('/dev/shmx/forkd'), '/dev/shmx rw');
  assert.equal(at('/dev/shmforkd'), '/dev rw,size=4096k');
  assert.equal(at('/run/a b/staging'), '/run/a b rw,huge=never');
  assert.equal(at('/var/lib/forkd'), '/ rw');
  assert.equal(mountOf([], '/x'), undefined);
});
