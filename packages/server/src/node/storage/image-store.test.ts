import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { storeImages } from './image-store.js';

// Runs on any filesystem: without reflink support the copy path is taken, and the
// content must be identical either way. Sharing itself is measured on Btrfs by the
// snapshot integration test and the benchmark.
test('stored images are byte-identical to the staged ones, with or without a previous image', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-img-'));
  try {
    const prev = join(dir, 'prev');
    const stage1 = join(dir, 's1');
    const old = randomBytes(3 * 1024 * 1024 + 100);
    await mkdir(stage1);
    await writeFile(join(stage1, 'pages-1.img'), old);
    await writeFile(join(stage1, 'core-1.img'), Buffer.from('core'));
    const s1 = await storeImages(stage1, prev, undefined);
    assert.equal(s1.files, 2);
    const changed = Buffer.from(old);
    randomBytes(5000).copy(changed, 1_000_000);
    const grown = Buffer.concat([changed, randomBytes(10_000)]);
    const stage2 = join(dir, 's2');
    await mkdir(stage2);
    await writeFile(join(stage2, 'pages-1.img'), grown);
    await writeFile(join(stage2, 'core-1.img'), Buffer.from('core2'));
    const next = join(dir, 'next');
    await storeImages(stage2, next, prev);
    assert.ok((await readFile(join(next, 'pages-1.img'))).equals(grown));
    assert.equal((await readFile(join(next, 'core-1.img'))).toString(), 'core2');
    assert.ok((await readFile(join(prev, 'pages-1.img'))).equals(old), 'the previous image is untouched');
    const shrunk = join(dir, 's3');
    await mkdir(shrunk);
    await writeFile(join(shrunk, 'pages-1.img'), old.subarray(0, 4096 * 3));
    await storeImages(shrunk, join(dir, 'small'), prev);
    assert.ok((await readFile(join(dir, 'small', 'pages-1.img'))).equals(old.subarray(0, 4096 * 3)));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
