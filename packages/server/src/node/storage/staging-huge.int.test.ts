import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '../../shared/exec.js';
import { mountOf, parseMountinfo } from '../../shared/mountinfo.js';
import { SHMEM_ENABLED, stagingHugePages, tmpfsHuge } from './staging-huge.js';

const root = process.getuid?.() === 0;

test('stagingHugePages remounts the staging dir\'s tmpfs with huge=within_size, every other option kept; then leaves it', { skip: (!root || !existsSync(SHMEM_ENABLED)) && 'needs root and transparent huge pages' }, async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-test-huge-'));
  const mnt = join(dir, 'shm');
  await mkdir(mnt);
  await exec('mount', ['-t', 'tmpfs', '-o', 'size=64m,mode=0700,huge=never', 'tmpfs', mnt]);
  try {
    const staging = join(mnt, 'forkd');
    await mkdir(staging);
    const options = async () => mountOf(parseMountinfo(await readFile('/proc/self/mountinfo', 'utf8')), staging)!.superOptions;
    assert.deepEqual(await stagingHugePages(staging, { leave: true }), { outcome: 'left' });
    assert.ok(!tmpfsHuge({ superOptions: await options() }));
    assert.deepEqual(await stagingHugePages(staging), { outcome: 'enabled', path: mnt });
    const after = await options();
    assert.ok(after.includes('huge=within_size'), after.join(','));
    assert.ok(after.includes('size=65536k') && after.includes('mode=700'), `size and mode kept: ${after.join(',')}`);
    assert.deepEqual(await stagingHugePages(staging), { outcome: 'already', path: mnt });
    // A file that fills large pages gets them (the point of it); the staging dir's own files still work.
    await writeFile(join(staging, 'pages.img'), Buffer.alloc(8 * 2 ** 20, 1));
    assert.equal((await readFile(join(staging, 'pages.img'))).length, 8 * 2 ** 20);
    // A kernel that refuses huge pages to tmpfs, and a path on no tmpfs, are left alone.
    const deny = join(dir, 'shmem_enabled');
    await writeFile(deny, 'always within_size advise never [deny] force\n');
    assert.deepEqual(await stagingHugePages(staging, { shmemEnabled: deny }), { outcome: 'unsupported' });
    const fakeInfo = join(dir, 'mountinfo');
    await writeFile(fakeInfo, `22 1 254:0 / / rw - ext4 /dev/vda rw\n`);
    assert.deepEqual(await stagingHugePages(staging, { mountinfo: fakeInfo }), { outcome: 'not-tmpfs' });
  } finally {
    await exec('umount', ['-l', mnt], { allowFailure: true });
    await rm(dir, { recursive: true, force: true });
  }
});
