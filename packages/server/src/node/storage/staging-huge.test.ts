import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMountinfo } from '../../shared/mountinfo.js';
import { mountOf, selectedShmemMode, tmpfsHuge } from './staging-huge.js';

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

test('tmpfsHuge: any huge= but never; selectedShmemMode: the bracketed mode', () => {
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=within_size'] }), true);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=always'] }), true);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=advise'] }), true);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'huge=never'] }), false);
  assert.equal(tmpfsHuge({ superOptions: ['rw', 'size=1g'] }), false);
  assert.equal(selectedShmemMode('always within_size advise [never] deny force\n'), 'never');
  assert.equal(selectedShmemMode('always within_size advise never [deny] force'), 'deny');
  assert.equal(selectedShmemMode(''), undefined);
  assert.equal(selectedShmemMode('garbage'), undefined);
});
