import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirBlobStore } from '../../blob/dir-blob-store.js';
import { bothOrThrow } from './both-or-throw.js';
import { downloadImages, uploadImages } from './image-transfer.js';

const dir = await mkdtemp(join(tmpdir(), 'forkd-image-transfer-'));
after(() => rm(dir, { recursive: true, force: true }));

test('images go up as one object per regular file in name order, and come back byte for byte', async () => {
  const blobs = await DirBlobStore.open(join(dir, 'store'));
  const src = join(dir, 'src');
  await mkdir(src);
  const pages = randomBytes(3 << 20);
  await writeFile(join(src, 'pages-1.img'), pages);
  await writeFile(join(src, 'inventory.img'), 'inv');
  await writeFile(join(src, 'empty.img'), '');
  await writeFile(join(src, '.uffd-1.sock'), 'not an image');
  await mkdir(join(src, 'subdir'));
  await symlink('/etc/passwd', join(src, 'link.img'));
  const up = await uploadImages(blobs, src);
  assert.deepEqual(up.images.map((f) => f.name), ['empty.img', 'inventory.img', 'pages-1.img'], 'regular files only, sorted');
  assert.ok(up.bytesUploaded >= pages.length);
  const again = await uploadImages(blobs, src);
  assert.equal(again.bytesUploaded, 0, 'a second upload of the same images stores nothing');
  assert.deepEqual(again.images, up.images, 'and lists the same objects');

  const dst = join(dir, 'dst');
  assert.equal(await downloadImages(blobs, up.images, dst), pages.length + 3);
  assert.deepEqual((await readdir(dst)).sort(), ['empty.img', 'inventory.img', 'pages-1.img']);
  assert.ok((await readFile(join(dst, 'pages-1.img'))).equals(pages));
  assert.equal((await stat(join(dst, 'pages-1.img'))).mode & 0o777, 0o600);
  await assert.rejects(downloadImages(blobs, up.images, dst), { code: 'EEXIST' }, 'never into a directory that exists');
});

test('bothOrThrow waits for the other job before it throws the first failure', async () => {
  let otherDone = false;
  const slow = new Promise<number>((r) => setTimeout(() => {
    otherDone = true;
    r(1);
  }, 30));
  await assert.rejects(bothOrThrow(Promise.reject(new Error('first')), slow), /first/);
  assert.equal(otherDone, true);
  assert.deepEqual(await bothOrThrow(Promise.resolve('a'), Promise.resolve(2)), ['a', 2]);
});
