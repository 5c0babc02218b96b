import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, mkdir, readdir, rm, symlink, utimes, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { blobStoreConformance } from './blob-store-conformance.js';
import { DirBlobStore } from './dir-blob-store.js';

blobStoreConformance('DirBlobStore', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-blob-'));
  return { store: await DirBlobStore.open(join(dir, 'store')), close: () => rm(dir, { recursive: true, force: true }) };
});

async function withStore(fn: (store: DirBlobStore, dir: string, outside: string) => Promise<void>): Promise<void> {
  const base = await mkdtemp(join(tmpdir(), 'forkd-blob-'));
  try {
    const outside = join(base, 'outside');
    await mkdir(outside);
    await writeFile(join(outside, 'secret~'), 'outside the store');
    await fn(await DirBlobStore.open(join(base, 'store')), join(base, 'store'), outside);
  } finally {
    await rm(base, { recursive: true, force: true });
  }
}

test('DirBlobStore follows no symbolic link out of its directory', async () => {
  await withStore(async (store, dir, outside) => {
    await symlink(outside, join(dir, 'evil'));
    await symlink(join(outside, 'secret~'), join(dir, 'leaf~'));
    assert.equal(await store.get('evil/secret'), undefined, 'no read through a linked directory');
    assert.equal(await store.has('evil/secret'), false);
    assert.equal(await store.get('leaf'), undefined, 'no read through a linked object file');
    assert.deepEqual(await collect(store.list('')), [], 'links are not listed');
    await assert.rejects(store.put('evil/new', new Uint8Array([1])), /not a directory/);
    assert.deepEqual(await readdir(outside), ['secret~'], 'nothing written outside');
    await store.delete('evil/secret');
    await store.put('leaf', new Uint8Array([7]));
    assert.equal(await readFile(join(outside, 'secret~'), 'utf8'), 'outside the store', 'a put replaces the link, not its target');
    assert.deepEqual([...(await store.get('leaf'))!], [7]);
  });
});

test('DirBlobStore: files that are not objects are ignored; stale temporaries are removed at open', async () => {
  await withStore(async (store, dir) => {
    await store.put('a/b', new Uint8Array([1]));
    await writeFile(join(dir, 'a', 'stray'), 'x');
    await mkdir(join(dir, 'a', 'x~y'));
    assert.deepEqual(await collect(store.list('')), ['a/b']);
    const old = join(dir, '~tmp', '1-dead');
    const young = join(dir, '~tmp', '2-live');
    await writeFile(old, 'x');
    await writeFile(young, 'x');
    const dayAgo = (Date.now() - 25 * 3600_000) / 1000;
    await utimes(old, dayAgo, dayAgo);
    await DirBlobStore.open(dir);
    assert.deepEqual(await readdir(join(dir, '~tmp')), ['2-live'], "another writer's temporary is left alone");
  });
});

async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const k of it) out.push(k);
  return out;
}
