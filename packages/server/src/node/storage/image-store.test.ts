import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../../shared/exec.js';
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

// forkd-patch reads in chunks of 64 pages: a run of changed pages across a chunk's end is still written whole, with bytes and with sums.
test('forkd-patch: runs across its read chunks, a base shorter than one chunk', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-patch-chunks-'));
  const f = (n: string) => join(dir, n);
  try {
    const old = randomBytes(200 * 4096);
    const next = Buffer.from(old);
    randomBytes(5 * 4096).copy(next, 62 * 4096); // pages 62-66: over the end of the first chunk
    randomBytes(2 * 4096).copy(next, 127 * 4096); // 127-128
    randomBytes(1).copy(next, 199 * 4096 + 4095); // the last byte
    await writeFile(f('base'), old);
    await writeFile(f('src'), next);
    // Bytes compared (the base has no sums), then sums: `summed` equals the base and has sums of its own.
    await writeFile(f('summed'), old);
    await copyFile(f('summed'), f('summed.base'));
    await writeFile(f('old.src'), old);
    assert.deepEqual((await patchImages([[f('old.src'), f('summed.base'), f('summed')]], 0.25))[0], { written: 0, moved: false });
    assert.ok(existsSync(f('.summed.sums')));
    for (const base of ['base', 'summed']) {
      await copyFile(f(base), f('dst'));
      assert.deepEqual((await patchImages([[f('src'), f(base), f('dst')]], 0.25))[0], { written: 8 * 4096, moved: false }, base);
      assert.ok((await readFile(f('dst'))).equals(next), base);
    }
    // A base of a few pages, a source of three chunks: everything past the base is written.
    await writeFile(f('small'), old.subarray(0, 3 * 4096));
    await copyFile(f('small'), f('dst2'));
    assert.deepEqual((await patchImages([[f('src'), f('small'), f('dst2')]], 1))[0], { written: next.length - 3 * 4096, moved: false });
    assert.ok((await readFile(f('dst2'))).equals(next));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// The page sums (forkd-patch --sums, which patchImages always asks for): written beside each patched image,
// used instead of the base's bytes while they describe exactly that file, ignored once it changed.
test('forkd-patch compares by the sums of the base it stored, never by stale ones', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-sums-'));
  const f = (n: string) => join(dir, n);
  const round = async (src: Buffer, base: string, dst: string) => {
    await writeFile(f('src'), src);
    await copyFile(f(base), f(dst));
    return (await patchImages([[f('src'), f(base), f(dst)]], 0.25))[0]!;
  };
  try {
    const v0 = randomBytes(32 * 4096);
    await writeFile(f('img0'), v0);
    // No sums yet: bytes compared, sums of the result written.
    const v1 = Buffer.from(v0);
    randomBytes(4096).copy(v1, 3 * 4096);
    assert.deepEqual(await round(v1, 'img0', 'img1'), { written: 4096, moved: false });
    assert.ok((await readFile(f('img1'))).equals(v1));
    assert.ok(existsSync(f('.img1.sums')) && !existsSync(f('.img0.sums')));
    // With them: one more page changed is found without reading img1, and the result's sums equal a fresh count's.
    const v2 = Buffer.from(v1);
    randomBytes(4096).copy(v2, 9 * 4096);
    assert.deepEqual(await round(v2, 'img1', 'img2'), { written: 4096, moved: false });
    assert.ok((await readFile(f('img2'))).equals(v2));
    await copyFile(f('img2'), f('fresh-base'));
    await round(v2, 'fresh-base', 'fresh');
    assert.ok((await readFile(f('.img2.sums'))).subarray(40).equals((await readFile(f('.fresh.sums'))).subarray(40)), 'the same sums as a full count');
    // Trusted for exactly that file: bytes changed behind them with the same mtime are not seen (the sums are what counts)...
    await exec('cp', ['-p', f('img2'), f('stamp')]);
    const behind = Buffer.from(v2);
    behind.fill(7, 0, 4096);
    await writeFile(f('img2'), behind);
    await exec('touch', ['-r', f('stamp'), f('img2')]); // the mtime to the nanosecond
    assert.deepEqual(await round(v2, 'img2', 'img3'), { written: 0, moved: false });
    // ...and once the file changed as forkd would see it (its mtime), they are stale: bytes are compared again.
    await writeFile(f('img2'), behind);
    assert.deepEqual(await round(v2, 'img2', 'img4'), { written: 4096, moved: false });
    assert.ok((await readFile(f('img4'))).equals(v2));
    // A damaged sums file is ignored the same way.
    await writeFile(f('.img4.sums'), 'FKSUMS01 and then nothing useful');
    const v5 = Buffer.from(v2);
    randomBytes(4096).copy(v5, 0);
    assert.deepEqual(await round(v5, 'img4', 'img5'), { written: 4096, moved: false });
    assert.ok((await readFile(f('img5'))).equals(v5));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
