import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, readFile, readlink, rm, stat, writeFile, lstat } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tarOf, type TestTarEntry } from '../../testing/tar-build.js';
import { applyLayer, fileDigest, LayerError, type UnpackBudget } from './layer-apply.js';
import { existsInScope } from './scoped-path.js';

const root = process.getuid?.() === 0;
const budget = (): UnpackBudget => ({ bytesLeft: 1 << 20, entriesLeft: 1000 });

async function withRoot(fn: (dir: string, apply: (es: TestTarEntry[], b?: UnpackBudget) => Promise<unknown>) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-layer-'));
  const rootfs = join(dir, 'root');
  let n = 0;
  try {
    await import('node:fs/promises').then((f) => f.mkdir(rootfs));
    await fn(rootfs, async (es, b = budget()) => {
      const tar = join(dir, `layer${n++}.tar`);
      await writeFile(tar, tarOf(es));
      return applyLayer(rootfs, tar, b);
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('layers stack: files, dirs, links, owners, setuid; whiteouts and opaque dirs hide what lies below', { skip: !root && 'needs root (chown)' }, async () => {
  await withRoot(async (r, apply) => {
    await apply([
      { path: 'usr/bin/', type: 'dir' },
      { path: 'usr/bin/tool', data: '#!/bin/sh\n', mode: 0o4755, uid: 0, gid: 0 },
      { path: 'bin', type: 'symlink', linkpath: 'usr/bin' },
      { path: 'home/user/notes', data: 'mine', uid: 1000, gid: 1000, mode: 0o600 },
      { path: 'd/x', data: 'x' },
      { path: 'd/y', data: 'y' },
      { path: 'gone', data: 'soon' },
      { path: 'hl', type: 'hardlink', linkpath: 'usr/bin/tool' },
      { path: 'dev/sda', type: 'char' },
    ]);
    assert.equal((await stat(join(r, 'usr/bin/tool'))).mode & 0o7777, 0o4755);
    assert.equal((await stat(join(r, 'home/user/notes'))).uid, 1000);
    assert.equal((await stat(join(r, 'hl'))).ino, (await stat(join(r, 'usr/bin/tool'))).ino);
    assert.equal(existsSync(join(r, 'dev/sda')), false, 'device nodes are not made');
    assert.equal(await existsInScope(r, '/bin/tool'), true);
    await apply([
      { path: '.wh.gone', data: '' },
      { path: 'd/', type: 'dir' },
      { path: 'd/z', data: 'z' },
      { path: 'd/.wh..wh..opq', data: '' },
      // Through the /bin symlink: lands in usr/bin, inside the root.
      { path: 'bin/other', data: 'o' },
    ]);
    assert.equal(existsSync(join(r, 'gone')), false);
    assert.deepEqual((await readdir(join(r, 'd'))).sort(), ['z']);
    assert.equal(await readFile(join(r, 'usr/bin/other'), 'utf8'), 'o');
    assert.equal(await existsInScope(r, '/bin/nothing'), false);
  });
});

test('hostile layers never write outside the root', { skip: !root && 'needs root (chown)' }, async () => {
  const outside = await mkdtemp(join(tmpdir(), 'forkd-outside-'));
  try {
    await withRoot(async (r, apply) => {
      await assert.rejects(apply([{ path: '../escape', data: 'x' }]), LayerError);
      await assert.rejects(apply([{ path: 'a/../../escape', data: 'x' }]), LayerError);
      // A symlink to a host directory, then a file through it: resolved inside the root.
      await apply([{ path: 'etc', type: 'symlink', linkpath: outside }, { path: 'etc/passwd', data: 'pwned' }]);
      assert.deepEqual(await readdir(outside), []);
      assert.equal(await readFile(join(r, outside, 'passwd'), 'utf8'), 'pwned');
      await apply([{ path: 'up', type: 'symlink', linkpath: '../../../../..' }, { path: 'up/top', data: 't' }]);
      assert.equal(await readFile(join(r, 'top'), 'utf8'), 't');
      // A symlink as the last part is replaced, not written through.
      await apply([{ path: 'f', type: 'symlink', linkpath: join(outside, 'target') }]);
      await apply([{ path: 'f', data: 'new' }]);
      assert.equal(existsSync(join(outside, 'target')), false);
      assert.equal((await lstat(join(r, 'f'))).isFile(), true);
      // Hard links only to what is inside.
      await assert.rejects(apply([{ path: 'h', type: 'hardlink', linkpath: '../../etc/passwd' }]), LayerError);
      await assert.rejects(apply([{ path: 'h', type: 'hardlink', linkpath: '/etc/shadow' }]), LayerError);
      await apply([{ path: 'loop', type: 'symlink', linkpath: 'loop' }]);
      await assert.rejects(apply([{ path: 'loop/x', data: '' }]), LayerError);
      assert.equal(await readlink(join(r, 'loop')), 'loop');
      // Size and count budgets.
      await assert.rejects(apply([{ path: 'big', data: 'x'.repeat(2000) }], { bytesLeft: 1000, entriesLeft: 10 }), /larger than/);
      await assert.rejects(apply(Array.from({ length: 20 }, (_, i) => ({ path: `n${i}`, data: '' })), { bytesLeft: 1000, entriesLeft: 10 }), /too many files/);
    });
    assert.deepEqual(await readdir(outside), []);
  } finally {
    await rm(outside, { recursive: true, force: true });
  }
});

test('a layer digest is that of its bytes', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-digest-'));
  try {
    await writeFile(join(dir, 'x'), 'abc');
    assert.equal(await fileDigest(join(dir, 'x')), 'sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
