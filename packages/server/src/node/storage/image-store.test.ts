import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { storeImages } from './image-store.js';

// Content must be exact on any filesystem (without reflink support the copy path is
// taken). Sharing itself is measured on Btrfs by the snapshot integration test.
test('stored images equal the staged ones: first, patched, grown, shrunk; staging is removed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-img-'));
  const stage = async (name: string, files: Record<string, Buffer | string>) => {
    const d = join(dir, name);
    await mkdir(d);
    for (const [f, data] of Object.entries(files)) await writeFile(join(d, f), data);
    return d;
  };
  try {
    const old = randomBytes(3 * 1024 * 1024 + 100);
    const s1 = await storeImages(await stage('s1', { 'pages-1.img': old, 'core-1.img': 'core' }), join(dir, 'd1'), undefined);
    assert.equal(s1.files, 2);
    assert.equal(s1.bytesTotal, old.length + 4);
    const changed = Buffer.from(old);
    randomBytes(5000).copy(changed, 1_000_000);
    const grown = Buffer.concat([changed, randomBytes(10_000)]);
    const staged2 = await stage('s2', { 'pages-1.img': grown, 'core-1.img': 'core2' });
    await storeImages(staged2, join(dir, 'd2'), join(dir, 'd1'), '/bin/true');
    assert.ok((await readFile(join(dir, 'd2', 'pages-1.img'))).equals(grown));
    assert.equal((await readFile(join(dir, 'd2', 'core-1.img'))).toString(), 'core2');
    assert.ok((await readFile(join(dir, 'd1', 'pages-1.img'))).equals(old), 'the previous image is untouched');
    await assert.rejects(readFile(join(staged2, 'core-1.img')), { code: 'ENOENT' });
    const small = old.subarray(0, 4096 * 3);
    await storeImages(await stage('s3', { 'pages-1.img': small }), join(dir, 'd3'), join(dir, 'd1'), '/bin/true');
    assert.ok((await readFile(join(dir, 'd3', 'pages-1.img'))).equals(small));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
