import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runcImages } from '../runtime/runc-images.js';
import { patchImages, storeImages } from './image-store.js';

// Content must be exact on any filesystem (without reflink support the copy path is
// taken). Sharing itself is measured on Btrfs by the snapshot integration test.
test('stored images equal the staged ones: first, patched, grown, shrunk', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-img-'));
  const stage = async (name: string, files: Record<string, Buffer | string>) => {
    const d = join(dir, name);
    await mkdir(d);
    for (const [f, data] of Object.entries(files)) await writeFile(join(d, f), data);
    return d;
  };
  try {
    const old = randomBytes(3 * 1024 * 1024 + 100);
    const s1 = await storeImages(await stage('s1', { 'pages-1.img': old, 'core-1.img': 'core' }), join(dir, 'd1'), undefined, runcImages.isPages);
    assert.equal(s1.files, 2);
    assert.equal(s1.bytesTotal, old.length + 4);
    const changed = Buffer.from(old);
    randomBytes(5000).copy(changed, 1_000_000);
    const grown = Buffer.concat([changed, randomBytes(10_000)]);
    const staged2 = await stage('s2', { 'pages-1.img': grown, 'core-1.img': 'core2' });
    await storeImages(staged2, join(dir, 'd2'), join(dir, 'd1'), runcImages.isPages, { dedupe: '/bin/true' });
    assert.ok((await readFile(join(dir, 'd2', 'pages-1.img'))).equals(grown));
    assert.equal((await readFile(join(dir, 'd2', 'core-1.img'))).toString(), 'core2');
    assert.ok((await readFile(join(dir, 'd1', 'pages-1.img'))).equals(old), 'the previous image is untouched');
    assert.ok(existsSync(join(staged2, 'core-1.img')), 'staging is the caller\'s to remove');
    const small = old.subarray(0, 4096 * 3);
    await storeImages(await stage('s3', { 'pages-1.img': small }), join(dir, 'd3'), join(dir, 'd1'), runcImages.isPages, { dedupe: '/bin/true' });
    assert.ok((await readFile(join(dir, 'd3', 'pages-1.img'))).equals(small));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// forkd-patch works on any filesystem: there DST is a plain copy instead of a reflink.
test('forkd-patch rewrites only the pages that differ, and gives up once the layout moved', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-patch-'));
  try {
    const old = randomBytes(64 * 4096 + 100);
    const next = Buffer.concat([old, randomBytes(8192)]);
    randomBytes(10).copy(next, 5 * 4096 + 7);
    randomBytes(4096 * 2).copy(next, 20 * 4096);
    const moved = randomBytes(old.length);
    const shrunk = old.subarray(0, 3 * 4096);
    const files = { next, moved, shrunk };
    await writeFile(join(dir, 'base'), old);
    const pairs: Array<[string, string, string]> = [];
    for (const [name, data] of Object.entries(files)) {
      await writeFile(join(dir, `${name}.src`), data);
      await writeFile(join(dir, `${name}.dst`), old);
      pairs.push([join(dir, `${name}.src`), join(dir, 'base'), join(dir, `${name}.dst`)]);
    }
    const [a, b, c] = await patchImages(pairs, 0.25);
    // One page at 5, two at 20, the old partial last page and the two new ones.
    assert.deepEqual(a, { written: 4096 + 8192 + (next.length - 64 * 4096), moved: false });
    assert.ok((await readFile(join(dir, 'next.dst'))).equals(next));
    assert.equal(b!.moved, true, 'a file that differs everywhere is reported as moved');
    assert.ok(b!.written <= old.length * 0.25 + 4096 * 2);
    assert.deepEqual(c, { written: 0, moved: false });
    assert.ok((await readFile(join(dir, 'shrunk.dst'))).equals(shrunk));
    assert.ok((await readFile(join(dir, 'base'))).equals(old), 'the base is only read');
    await assert.rejects(patchImages([[join(dir, 'missing'), join(dir, 'base'), join(dir, 'next.dst')]], 0.25), { code: 'INTERNAL' });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
