import { randomBytes } from 'node:crypto';
import { chmod, lchown, link, mkdir, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { assertReadOnly, exists, fill, tree, writeSynced } from './storage-conformance-helpers.js';
import { poolConformance } from './storage-pool-conformance.js';
import type { Storage } from './storage.js';

/** A storage for one test, on its own empty root; `close` removes what the test left. */
export interface OpenedStorage {
  storage: Storage;
  close(): Promise<void>;
}

export interface StorageConformanceOptions {
  /** frozenCommit gives a command that really snapshots (Btrfs); without this its test is skipped. */
  frozenCommit?: boolean;
  /** unchangedSince can say true (Btrfs); without this it must always say false. */
  provesUnchanged?: boolean;
  /** Why the whole suite cannot run here (e.g. it needs root), or false. */
  skip?: string | false;
}

const MiB = 1024 * 1024;

/**
 * The contract every Storage implementation passes (Btrfs, and the
 * directory-backed one unit tests of the manager run on), as node:test tests
 * under `name`: what the manager and the template registry rely on when they
 * make, snapshot, publish and remove volumes. Files are written and read
 * through `path()`, as the manager's own file operations do.
 */
export function storageConformance(name: string, open: () => Promise<OpenedStorage>, opts: StorageConformanceOptions = {}): void {
  describe(`Storage conformance: ${name}`, { skip: opts.skip ?? false }, () => {
    const withStorage = (title: string, fn: (storage: Storage) => Promise<void>, skip: string | false = false) =>
      test(title, { skip }, async () => {
        const opened = await open();
        try {
          await fn(opened.storage);
        } finally {
          await opened.close();
        }
      });

    withStorage('create makes an empty writable volume at path(key); exists tells', async (s) => {
      assert.equal(await s.exists('sandboxes/a'), false);
      const p = await s.create('sandboxes/a');
      assert.equal(p, s.path('sandboxes/a'));
      assert.equal(await s.exists('sandboxes/a'), true);
      assert.ok((await stat(p)).isDirectory());
      assert.deepEqual(await readdir(p), []);
      await writeFile(join(p, 'file'), 'hello');
      assert.equal(await readFile(join(s.path('sandboxes/a'), 'file'), 'utf8'), 'hello');
    });

    withStorage('create over an existing volume fails and keeps its files', async (s) => {
      const p = await s.create('templates/a');
      await writeFile(join(p, 'file'), 'kept');
      await assert.rejects(s.create('templates/a'));
      assert.equal(await readFile(join(p, 'file'), 'utf8'), 'kept');
    });

    withStorage('prepare gives a copy-on-write copy: the parent\'s files are there, and neither side sees the other\'s writes', async (s) => {
      const parent = await s.create('templates/base');
      await fill(parent);
      const child = await s.prepare('sandboxes/a', 'templates/base');
      assert.equal(child, s.path('sandboxes/a'));
      assert.deepEqual(await tree(child), await tree(parent));
      await writeFile(join(child, 'etc/hostname'), 'child');
      await writeFile(join(child, 'new'), 'only in the child');
      await rm(join(child, 'bin/tool'));
      await writeFile(join(parent, 'etc/motd'), 'parent again');
      assert.equal(await readFile(join(parent, 'etc/hostname'), 'utf8'), 'base');
      assert.equal(await exists(join(parent, 'new')), false);
      assert.equal(await exists(join(parent, 'bin/tool')), true);
      assert.equal(await readFile(join(child, 'etc/motd'), 'utf8'), 'welcome');
      assert.equal((await stat(join(child, 'bin/run'))).mode & 0o777, 0o755, 'modes are kept');
    });

    withStorage('a copy keeps owners, modes, times and hard links, through a commit too', async (s) => {
      const parent = await s.create('templates/.build');
      await fill(parent);
      const file = join(parent, 'etc/hostname');
      await link(file, join(parent, 'etc/hostname.link'));
      await chmod(join(parent, 'bin/tool'), 0o4710);
      await mkdir(join(parent, 'private'), { mode: 0o700 });
      await chmod(join(parent, 'private'), 0o700);
      const past = new Date('2020-02-02T02:02:02.000Z');
      await utimes(file, past, past);
      // Roots of sandboxes in a user namespace belong to the host ids they map to.
      if (process.geteuid?.() === 0) await lchown(file, 100_000, 100_001);
      const owner = await stat(file);
      await s.commit('templates/base', 'templates/.build');
      for (const key of ['templates/base', 'sandboxes/a']) {
        const root = key === 'sandboxes/a' ? await s.prepare(key, 'templates/base') : s.path(key);
        const copy = await stat(join(root, 'etc/hostname'));
        assert.equal(copy.uid, owner.uid, `${key}: owner`);
        assert.equal(copy.gid, owner.gid, `${key}: group`);
        assert.equal(copy.mtimeMs, past.getTime(), `${key}: modification time`);
        assert.equal((await stat(join(root, 'etc/hostname.link'))).ino, copy.ino, `${key}: a hard link stays one file`);
        if (key === 'sandboxes/a') {
          assert.equal((await stat(join(root, 'bin/tool'))).mode & 0o7777, 0o4710, `${key}: setuid bit and mode`);
          assert.equal((await stat(join(root, 'private'))).mode & 0o7777, 0o700, `${key}: directory mode`);
        }
      }
      await s.commit('snapshots/s1/rootfs', 'templates/base', { keepActive: true });
      await assertReadOnly(s.path('snapshots/s1/rootfs'));
      const again = await s.prepare('sandboxes/b', 'snapshots/s1/rootfs');
      assert.equal((await stat(join(again, 'private'))).mode & 0o7777, 0o700, 'a copy of a snapshot of a committed volume keeps modes');
      await writeFile(join(again, 'private/new'), 'writable');
    });

    withStorage('prepare from a missing parent fails with NOT_FOUND and makes nothing', async (s) => {
      await assert.rejects(s.prepare('sandboxes/a', 'templates/nope'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
      assert.equal(await s.exists('sandboxes/a'), false);
    });

    withStorage('commit with keepActive makes a read-only snapshot and leaves the source writable', async (s) => {
      const src = await s.create('sandboxes/a');
      await fill(src);
      const snap = await s.commit('snapshots/s1/rootfs', 'sandboxes/a', { keepActive: true });
      assert.equal(snap, s.path('snapshots/s1/rootfs'));
      const before = await tree(snap);
      assert.deepEqual(before, await tree(src));
      await assertReadOnly(snap);
      assert.deepEqual(await tree(snap), before);
      await writeFile(join(src, 'etc/hostname'), 'later');
      await writeFile(join(src, 'new'), 'later');
      assert.deepEqual(await tree(snap), before, 'later writes to the source do not reach the snapshot');
    });

    withStorage('commit without keepActive consumes the source', async (s) => {
      const src = await s.create('templates/.tmp-a');
      await fill(src);
      const files = await tree(src);
      const p = await s.commit('templates/a', 'templates/.tmp-a');
      assert.equal(await s.exists('templates/.tmp-a'), false);
      assert.equal(await s.exists('templates/a'), true);
      assert.deepEqual(await tree(p), files);
      await assertReadOnly(p);
    });

    withStorage('a committed volume is the parent of any number of independent writable volumes', async (s) => {
      await fill(await s.create('templates/.build'));
      await s.commit('templates/base', 'templates/.build');
      const a = await s.prepare('sandboxes/a', 'templates/base');
      const b = await s.prepare('sandboxes/b', 'templates/base');
      await writeFile(join(a, 'etc/hostname'), 'a');
      await writeFile(join(a, 'new'), 'a');
      await mkdir(join(a, 'etc/more'));
      await writeFile(join(b, 'etc/hostname'), 'b');
      assert.equal(await readFile(join(a, 'etc/hostname'), 'utf8'), 'a');
      assert.equal(await readFile(join(b, 'etc/hostname'), 'utf8'), 'b');
      assert.equal(await exists(join(b, 'new')), false);
      assert.equal(await readFile(join(s.path('templates/base'), 'etc/hostname'), 'utf8'), 'base');
      assert.equal((await stat(join(a, 'bin/run'))).mode & 0o777, 0o755, 'a copy of a committed volume keeps the modes of its files');
      await s.commit('snapshots/s1/rootfs', 'sandboxes/a', { keepActive: true });
      const c = await s.prepare('sandboxes/c', 'snapshots/s1/rootfs');
      assert.equal(await readFile(join(c, 'new'), 'utf8'), 'a', 'a snapshot of a copy is a parent too');
    });

    withStorage('rename moves a writable volume anywhere and a committed one within its directory; each stays what it was', async (s) => {
      await fill(await s.create('templates/.tmp-x'));
      await s.rename('templates/.tmp-x', 'templates/x');
      assert.equal(await s.exists('templates/.tmp-x'), false);
      assert.equal(await readFile(join(s.path('templates/x'), 'etc/hostname'), 'utf8'), 'base');
      await writeFile(join(s.path('templates/x'), 'new'), 'still writable');
      await s.rename('templates/x', 'moved/deeper/x');
      await writeFile(join(s.path('moved/deeper/x'), 'new'), 'moved');
      // A committed volume moves within its directory only: Btrfs refuses to rewrite a read-only one's `..`.
      await s.commit('templates/.tmp-y', 'moved/deeper/x', { keepActive: true });
      await s.rename('templates/.tmp-y', 'templates/y');
      await assert.rejects(s.rename('templates/y', 'elsewhere/y'));
      const renamed = s.path('templates/y');
      assert.equal(await readFile(join(renamed, 'new'), 'utf8'), 'moved');
      await assertReadOnly(renamed);
      const child = await s.prepare('sandboxes/a', 'templates/y');
      await writeFile(join(child, 'new'), 'child');
    });

    withStorage('remove is idempotent, and removing a parent leaves its children whole', async (s) => {
      await fill(await s.create('templates/.build'));
      await s.commit('templates/base', 'templates/.build');
      const a = await s.prepare('sandboxes/a', 'templates/base');
      await writeFile(join(a, 'new'), 'a');
      await s.commit('snapshots/s1/rootfs', 'sandboxes/a', { keepActive: true });
      const b = await s.prepare('sandboxes/b', 'sandboxes/a');
      const files = await tree(b);
      await s.remove('templates/base');
      await s.remove('sandboxes/a');
      assert.equal(await s.exists('templates/base'), false);
      assert.equal(await s.exists('sandboxes/a'), false);
      assert.deepEqual(await tree(b), files);
      assert.deepEqual(await tree(s.path('snapshots/s1/rootfs')), files);
      await s.remove('snapshots/s1/rootfs');
      assert.equal(await s.exists('snapshots/s1/rootfs'), false, 'a committed volume can be removed');
      await s.remove('snapshots/s1/rootfs');
      await s.remove('sandboxes/never');
      assert.deepEqual(await tree(b), files);
    });

    withStorage('remove takes a plain directory left where a volume was to be', async (s) => {
      await mkdir(join(s.path('templates/half'), 'etc'), { recursive: true });
      await writeFile(join(s.path('templates/half'), 'etc/file'), 'x');
      await s.remove('templates/half');
      assert.equal(await s.exists('templates/half'), false);
    });

    withStorage('remove takes the volumes made inside a volume with it, at any depth; a snapshot of it and its other copies stay removable', async (s) => {
      // What root in a sandbox could do with BTRFS_IOC_SUBVOL_CREATE before seccomp refused it.
      const a = await s.create('sandboxes/a');
      await fill(a);
      await writeFile(join(await s.create('sandboxes/a/nested'), 'data'), 'nested');
      await writeFile(join(await s.create('sandboxes/a/nested/deeper'), 'data'), 'deeper');
      await mkdir(join(a, 'dir'));
      await s.create('sandboxes/a/dir/other');
      const b = await s.create('sandboxes/b');
      await fill(b);
      const files = await tree(b);
      await s.commit('snapshots/s1/rootfs', 'sandboxes/a', { keepActive: true });
      await s.remove('sandboxes/a');
      assert.equal(await s.exists('sandboxes/a'), false);
      assert.deepEqual(await s.list('sandboxes'), ['sandboxes/b']);
      assert.deepEqual(await tree(b), files, 'a neighbour is untouched');
      // A rewind: a new root from the snapshot in its place, later removed in turn.
      await s.prepare('sandboxes/a', 'snapshots/s1/rootfs');
      await s.remove('sandboxes/a');
      await s.remove('snapshots/s1/rootfs');
      assert.equal(await s.exists('snapshots/s1/rootfs'), false);
      assert.deepEqual(await s.list('sandboxes'), ['sandboxes/b']);
    });

    withStorage('list gives the keys directly under a prefix, sorted; an absent prefix lists nothing', async (s) => {
      // Made in an order no directory keeps by itself (creation, reverse, hash): the result is sorted.
      const names = ['m', 'b', 'x', '.tmp-c', 'a', 'q', 'e', 'z', 'k', 'c', 'w', 'g'];
      for (const n of names) await s.create(`sandboxes/${n}`);
      await s.create('templates/base');
      await s.commit('snapshots/s1/rootfs', 'sandboxes/a', { keepActive: true });
      const sorted = [...names].sort().map((n) => `sandboxes/${n}`);
      assert.deepEqual(await s.list('sandboxes'), sorted);
      assert.deepEqual(await s.list('snapshots'), ['snapshots/s1']);
      assert.deepEqual(await s.list('snapshots/s1'), ['snapshots/s1/rootfs']);
      assert.deepEqual(await s.list('nothing'), []);
      await s.remove('sandboxes/b');
      assert.deepEqual(await s.list('sandboxes'), sorted.filter((k) => k !== 'sandboxes/b'));
    });

    withStorage('diskUsage grows with what a volume writes; a fresh copy writes little of its own', async (s) => {
      const p = await s.create('templates/.build');
      const empty = await s.diskUsage('templates/.build');
      assert.ok(empty.totalBytes < 64 * 1024, `empty: ${empty.totalBytes}`);
      await writeSynced(join(p, 'data'), randomBytes(2 * MiB));
      const full = await s.diskUsage('templates/.build');
      assert.ok(full.totalBytes >= empty.totalBytes + 2 * MiB, `after 2 MiB: ${full.totalBytes}`);
      assert.ok(full.exclusiveBytes >= 2 * MiB, `made by itself: ${full.exclusiveBytes}`);
      await s.commit('templates/base', 'templates/.build', { keepActive: true });
      const source = await s.diskUsage('templates/.build');
      assert.ok(source.totalBytes >= 2 * MiB && source.exclusiveBytes < 256 * 1024, `a snapshotted source shares its bytes: ${JSON.stringify(source)}`);
      await writeSynced(join(p, 'more'), randomBytes(MiB));
      await s.prepare('sandboxes/b', 'templates/.build');
      const parent = await s.diskUsage('templates/.build');
      assert.ok(parent.totalBytes >= 3 * MiB && parent.exclusiveBytes < 256 * 1024, `so does a prepared parent: ${JSON.stringify(parent)}`);
      const child = await s.prepare('sandboxes/a', 'templates/base');
      const fresh = await s.diskUsage('sandboxes/a');
      assert.ok(fresh.totalBytes >= 2 * MiB, `a copy holds its parent's bytes: ${fresh.totalBytes}`);
      assert.ok(fresh.exclusiveBytes < 256 * 1024, `but shares them: ${fresh.exclusiveBytes}`);
      await writeSynced(join(child, 'own'), randomBytes(MiB));
      const wrote = await s.diskUsage('sandboxes/a');
      assert.ok(wrote.totalBytes >= fresh.totalBytes + MiB, `total: ${wrote.totalBytes}`);
      assert.ok(wrote.exclusiveBytes >= MiB && wrote.exclusiveBytes < MiB + 256 * 1024, `own: ${wrote.exclusiveBytes}`);
    });

    withStorage('invalid keys are refused by every method', async (s) => {
      const bad = ['', '.', '..', '/abs', 'a/../b', 'a/./b', 'a//b', 'a/', 'sp ace', '-flag', 'a/b/c/d/e/f', `${'x'.repeat(129)}`];
      for (const key of bad) {
        assert.throws(() => s.path(key), Error, `path(${JSON.stringify(key)})`);
        await assert.rejects(s.exists(key), Error, `exists(${JSON.stringify(key)})`);
        await assert.rejects(s.create(key), Error, `create(${JSON.stringify(key)})`);
        await assert.rejects(s.remove(key), Error, `remove(${JSON.stringify(key)})`);
        await assert.rejects(s.list(key), Error, `list(${JSON.stringify(key)})`);
      }
      await s.create('sandboxes/ok');
      await assert.rejects(s.prepare('sandboxes/../x', 'sandboxes/ok'));
      await assert.rejects(s.prepare('sandboxes/x', '../ok'));
      await assert.rejects(s.commit('../x', 'sandboxes/ok', { keepActive: true }));
      await assert.rejects(s.rename('sandboxes/ok', '/tmp/x'));
      await assert.rejects(s.diskUsage('..'));
      assert.equal(await s.exists('sandboxes/ok'), true);
    });

    withStorage(
      'frozenCommit gives an argv that makes the same read-only snapshot, into parent directories it made',
      async (s) => {
        const src = await s.create('sandboxes/a');
        await fill(src);
        const commit = await s.frozenCommit('snapshots/.tmp-s1/rootfs', 'sandboxes/a');
        assert.equal(commit.kind, 'host-command');
        assert.equal(await s.exists('snapshots/.tmp-s1/rootfs'), false, 'nothing is snapshotted until it runs');
        assert.ok((await stat(dirname(s.path('snapshots/.tmp-s1/rootfs')))).isDirectory());
        const [file, ...args] = commit.argv;
        assert.ok(file);
        await exec(file, args);
        const snap = s.path('snapshots/.tmp-s1/rootfs');
        assert.deepEqual(await tree(snap), await tree(src));
        await assertReadOnly(snap);
        await writeFile(join(src, 'new'), 'the source stays writable');
        assert.equal(await exists(join(snap, 'new')), false);
        const c = await s.prepare('sandboxes/b', 'snapshots/.tmp-s1/rootfs');
        assert.equal(await readFile(join(c, 'etc/hostname'), 'utf8'), 'base');
      },
      opts.frozenCommit ? false : 'this implementation has no command form of commit',
    );

    withStorage('unchangedSince: true only for the volume a read-only commit was taken of, until a change of it is committed', async (s) => {
      const src = await s.create('sandboxes/a');
      await fill(src);
      await s.commit('snapshots/s1/rootfs', 'sandboxes/a', { keepActive: true });
      // What a caller sees once a change is on disk (a sandbox's writes, committed by the filesystem in time).
      const settle = () => exec('sync', ['-f', src]);
      assert.equal(await s.unchangedSince('sandboxes/a', 'snapshots/s1/rootfs'), opts.provesUnchanged === true);
      assert.equal(await s.unchangedSince('sandboxes/missing', 'snapshots/s1/rootfs'), false);
      await s.prepare('sandboxes/b', 'snapshots/s1/rootfs');
      assert.equal(await s.unchangedSince('sandboxes/b', 'snapshots/s1/rootfs'), false, 'a copy of the snapshot is not what it was taken of');
      await writeFile(join(src, 'etc/hostname'), 'changed');
      await settle();
      assert.equal(await s.unchangedSince('sandboxes/a', 'snapshots/s1/rootfs'), false, 'changed since');
      await s.commit('snapshots/s2/rootfs', 'sandboxes/a', { keepActive: true });
      assert.equal(await s.unchangedSince('sandboxes/a', 'snapshots/s2/rootfs'), opts.provesUnchanged === true, 'unchanged since the newer one');
      assert.equal(await s.unchangedSince('sandboxes/a', 'snapshots/s1/rootfs'), false, 'but not since the older one');
      await s.create('sandboxes/a/nested');
      await s.commit('snapshots/s3/rootfs', 'sandboxes/a', { keepActive: true });
      assert.equal(await s.unchangedSince('sandboxes/a', 'snapshots/s3/rootfs'), false, 'a volume nested in it changes on its own');
      await s.remove('sandboxes/a/nested');
    });

    poolConformance(withStorage);
  });
}
