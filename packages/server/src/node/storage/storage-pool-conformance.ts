import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import assert from 'node:assert/strict';
import type { RootKind } from '../runtime/sandbox-root.js';
import { assertReadOnly, exists, fill, tree } from './storage-conformance-helpers.js';
import type { Storage } from './storage.js';

type WithStorage = (title: string, fn: (storage: Storage) => Promise<void>) => void;

/**
 * The part of the Storage contract beyond volumes' copy-on-write life: what
 * a root is, trees imported from the host (templates), plain directories of
 * memory images and the pool's own usage. Called inside storageConformance.
 */
export function poolConformance(withStorage: WithStorage): void {
  withStorage('root gives a volume as a directory root at path(key); another kind is refused', async (s) => {
    const p = await s.create('sandboxes/a');
    assert.deepEqual(s.root('sandboxes/a', 'directory'), { kind: 'directory', path: p });
    assert.throws(() => s.root('sandboxes/a', 'image' as RootKind));
    assert.throws(() => s.root('../a', 'directory'));
  });

  withStorage('importTree makes a read-only volume holding a copy of a host directory; the source is untouched', async (s) => {
    const src = await mkdtemp(join(tmpdir(), 'forkd-import-'));
    try {
      await fill(src);
      await s.importTree('templates/.tmp-t', src);
      const p = s.path('templates/.tmp-t');
      assert.deepEqual(await tree(p), await tree(src));
      assert.equal((await stat(join(p, 'bin/run'))).mode & 0o777, 0o755, 'modes are kept');
      await assertReadOnly(p);
      await writeFile(join(src, 'etc/hostname'), 'changed at the source');
      assert.equal(await readFile(join(p, 'etc/hostname'), 'utf8'), 'base');
      // Published as the registry does: renamed within its directory, then the parent of sandboxes.
      await s.rename('templates/.tmp-t', 'templates/t');
      const c = await s.prepare('sandboxes/a', 'templates/t');
      await writeFile(join(c, 'etc/hostname'), 'a sandbox writes its own');
      assert.equal(await readFile(join(s.path('templates/t'), 'etc/hostname'), 'utf8'), 'base');
    } finally {
      await rm(src, { recursive: true, force: true });
    }
  });

  withStorage('importTree over an existing volume fails and keeps it', async (s) => {
    const src = await mkdtemp(join(tmpdir(), 'forkd-import-'));
    try {
      await writeFile(join(await s.create('templates/t'), 'file'), 'kept');
      await assert.rejects(s.importTree('templates/t', src));
      assert.equal(await readFile(join(s.path('templates/t'), 'file'), 'utf8'), 'kept');
    } finally {
      await rm(src, { recursive: true, force: true });
    }
  });

  withStorage('adoptDir moves a directory of the pool to a key (parents made); removeDir removes it, idempotently', async (s) => {
    // Memory images of a snapshot, in the pool, become a template's.
    const images = join(s.path('snapshots/s1'), 'memory');
    await mkdir(images, { recursive: true });
    await writeFile(join(images, 'pages-1.img'), 'pages');
    await s.adoptDir('template-images/t', images);
    assert.equal(await exists(images), false, 'moved, not copied');
    assert.equal(await readFile(join(s.path('template-images/t'), 'pages-1.img'), 'utf8'), 'pages');
    await s.removeDir('template-images/t');
    assert.equal(await exists(s.path('template-images/t')), false);
    await s.removeDir('template-images/t');
    await s.removeDir('template-images/never');
  });

  withStorage('usage gives the used and total bytes of the pool\'s filesystem', async (s) => {
    await s.create('sandboxes/a');
    const u = await s.usage();
    assert.ok(u.sizeBytes > 0, 'a size');
    assert.ok(u.usedBytes > 0 && u.usedBytes <= u.sizeBytes, 'used, within the size');
  });
}
