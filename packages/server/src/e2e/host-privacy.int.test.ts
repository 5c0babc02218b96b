import { existsSync } from 'node:fs';
import { chmod, chown, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../shared/exec.js';
import { REPO_ROOT } from '../shared/config.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { asOtherUser, deniedMessage, OTHER_UID } from '../testing/other-host-user.js';
import { openStagingDir } from '../node/storage/staging-dir.js';

/**
 * Other host users against a real daemon (`forkd serve`): they read none of
 * its state (pool, databases, keys, staging, bundles, runc's state), cannot
 * reach a setuid binary or a device node a sandbox planted, while setuid
 * binaries keep working inside; a staging dir someone else prepared stops
 * the daemon; the CRIU action helper follows only root's own hook file.
 */

/** Prints its effective uid: setuid-root works when it prints 0 for an unprivileged caller. */
const EUID_PROBE = '#include <stdio.h>\n#include <unistd.h>\nint main(void){printf("%d\\n",(int)geteuid());return 0;}\n';

const ACTION = join(REPO_ROOT, 'packages/host-tools/build/forkd-criu-action');

describe('host privacy: other host users', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let id = '';
  let snap = '';

  const url = (): ApiTarget => daemon!;
  const sh = async (command: string, user?: string) => {
    const r = await api(url(), 'POST', `/v1/sandboxes/${id}/exec`, { cmd: ['sh', '-c', command], ...(user ? { user } : {}) });
    assert.equal(r.status, 200, r.text);
    const events = r.text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { type: string; data?: string; exitCode?: number });
    const text = (t: string) => events.filter((e) => e.type === t).map((e) => Buffer.from(e.data ?? '', 'base64').toString()).join('');
    return { stdout: text('stdout'), stderr: text('stderr'), exit: events.find((e) => e.type === 'exit')?.exitCode ?? -1 };
  };
  /** Every way into the sandbox's root from the host: its volume, and the runtime's view of it when there is one. */
  // The idmapped view runc is given is mounted only in runc's and the container's mount namespaces: on the
  // host, its mount point stays an empty directory (checked below), and the volume is the one way in.
  const sandboxRoots = () => [join(cfg.config.pool.mountPoint, 'sandboxes', id)].filter((p) => existsSync(p));

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-privacy-'));
    // Like /var/lib: anyone may pass through, so the state dir's own modes are what is tested.
    await chmod(dir, 0o755);
    cfg = testConfig(dir);
    daemon = await startDaemonProcess(cfg.env);
    id = (await api(url(), 'POST', '/v1/sandboxes', {})).json.id;
    assert.equal((await execHttp(url(), id, ['true'])).exit, 0);
    const s = await api(url(), 'POST', `/v1/sandboxes/${id}/snapshots`, {});
    assert.equal(s.status, 201, s.text);
    snap = s.json.id;
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('the harness: the other user reads what everyone may, and is not root', async () => {
    assert.equal((await asOtherUser(['cat', '/etc/hostname'])).code, 0);
    assert.equal((await asOtherUser(['id', '-u'])).stdout.trim(), String(OTHER_UID));
    assert.equal((await asOtherUser(['ls', dir])).code, 0, 'the directory holding the state dir is open, like /var/lib');
    // Its capabilities are gone before it runs what it is given (setpriv keeps them through its own execve).
    const closed = join(dir, 'closed');
    await mkdir(closed, { mode: 0o700 });
    await writeFile(join(closed, 'run'), '#!/bin/sh\nid -u\n', { mode: 0o755 });
    assert.ok(deniedMessage(await asOtherUser([join(closed, 'run')])), 'a program in a root-only directory does not run');
  });

  test('reading the pool, databases, admin key, staging, bundles, snapshots and runc state fails', async () => {
    const state = cfg.config.stateDir;
    const memory = join(cfg.config.pool.mountPoint, 'snapshots', snap, 'memory');
    const image = (await readdir(memory)).find((n) => n.startsWith('pages-'));
    assert.ok(image, 'the snapshot has memory images');
    const files = [
      join(state, 'pool.img'),
      join(state, 'forkd.db'),
      join(state, 'forkd.db-wal'),
      join(state, 'control.db'),
      join(state, 'control.db-wal'),
      join(state, 'admin.key'),
      join(state, 'bundles', id, 'config.json'),
      join(cfg.config.pool.mountPoint, 'sandboxes', id, 'etc', 'hostname'),
      join(memory, image),
      join(cfg.config.runDir, 'runc', id, 'state.json'),
    ];
    const dirs = [state, cfg.config.pool.mountPoint, cfg.config.stagingDir, join(state, 'bundles'), join(cfg.config.runDir, 'runc'), cfg.config.runDir, ...sandboxRoots()];
    for (const f of files) {
      assert.ok(existsSync(f), `${f} exists (root reads it)`);
      const r = await asOtherUser(['cat', f]);
      assert.ok(deniedMessage(r), `another user reading ${f}: ${r.code} ${r.stderr}`);
    }
    for (const d of dirs) {
      const r = await asOtherUser(['ls', d]);
      assert.ok(deniedMessage(r), `another user listing ${d}: ${r.code} ${r.stderr}`);
    }
  });

  test('everything the daemon and its tools made in the state dir is owner-only; gates are root-only', async () => {
    const open: string[] = [];
    const skip = new Set([cfg.config.pool.mountPoint]);
    const walk = async (p: string): Promise<void> => {
      const st = await lstat(p);
      if (!st.isSymbolicLink() && (st.mode & 0o077) !== 0) open.push(`${p} 0${(st.mode & 0o7777).toString(8)}`);
      if (st.isDirectory() && !skip.has(p)) for (const n of await readdir(p)) await walk(join(p, n));
    };
    await walk(cfg.config.stateDir);
    assert.deepEqual(open, []);
    const gate = async (p: string, mode: number) => {
      const st = await lstat(p);
      assert.equal(st.uid, 0, `${p} is root's`);
      assert.equal(st.mode & 0o7777, mode, `${p} is 0${mode.toString(8)}`);
    };
    await gate(cfg.config.pool.mountPoint, 0o700);
    await gate(cfg.config.stagingDir, 0o700);
    await gate(cfg.config.runDir, 0o711);
    await gate(join(cfg.config.runDir, 'runc'), 0o700);
    await gate(join(cfg.config.runDir, 'netns'), 0o700);
  });

  test('a setuid-root binary and a device node planted in a sandbox are out of other host users\' reach', async () => {
    assert.equal((await sh('cp /bin/sh /tmp/rootsh && chmod 4755 /tmp/rootsh')).exit, 0);
    assert.deepEqual(await readdir(join(cfg.config.runDir, 'roots', id, 'root')).catch(() => []), [], 'no view of the root on the host');
    // mknod may be refused inside (user namespace, seccomp): then that attack is stopped before it starts.
    const mknod = (await sh('mknod -m 0666 /tmp/kmem c 1 2')).exit === 0;
    for (const root of sandboxRoots()) {
      const sh0 = join(root, 'tmp', 'rootsh');
      assert.ok(((await lstat(sh0)).mode & 0o4000) !== 0, `${sh0} is setuid (as planted)`);
      const r = await asOtherUser([sh0, '-p', '-c', 'id -u']);
      assert.ok(deniedMessage(r), `another user running ${sh0}: ${r.code} ${r.stdout} ${r.stderr}`);
      if (mknod) {
        const d = await asOtherUser(['dd', `if=${join(root, 'tmp', 'kmem')}`, 'bs=1', 'count=1', 'status=none']);
        assert.ok(deniedMessage(d), `another user opening a planted device node: ${d.code} ${d.stderr}`);
      }
    }
  });

  test('the pool is mounted nodev (not nosuid): a device node made in a sandbox opens neither inside nor on the host', async (t) => {
    const line = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.split(' ')[4] === cfg.config.pool.mountPoint).pop() ?? '';
    const flags = line.split(' ')[5]?.split(',') ?? [];
    assert.ok(flags.includes('nodev') && !flags.includes('nosuid'), `pool mount options: ${flags.join(',')}`);
    // c 1:3 is /dev/null's: the devices cgroup lets it open, so only the mount flag stands in the way.
    const made = await sh('mknod -m 0666 /tmp/null-node c 1 3 && echo made');
    if (!made.stdout.includes('made')) {
      // mknod refused inside (user namespace, seccomp): the attack is stopped before the mount flag matters.
      t.diagnostic(`mknod refused inside: ${made.stderr.trim()}`);
      return;
    }
    const inside = await sh('echo x > /tmp/null-node', 'user');
    assert.notEqual(inside.exit, 0, 'the node does not open inside');
    assert.match(inside.stderr, /Permission denied/);
    assert.equal((await sh('echo x > /dev/null', 'user')).exit, 0, 'the sandbox\'s own /dev works');
    const host = await exec('dd', [`of=${join(cfg.config.pool.mountPoint, 'sandboxes', id, 'tmp', 'null-node')}`, 'status=none'], { input: 'x', allowFailure: true });
    assert.ok(deniedMessage(host), `root on the host opening it: ${host.code} ${host.stderr}`);
  });

  test('setuid binaries inside a sandbox still work for its unprivileged users', async () => {
    const src = join(dir, 'euid.c');
    await writeFile(src, EUID_PROBE);
    await exec('gcc', ['-static', '-O1', '-o', join(dir, 'euid'), src]);
    const put = await fetch(`${url().url}/v1/sandboxes/${id}/files?path=/usr/local/bin/euid&mode=${0o755}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${url().apiKey}`, 'content-type': 'application/octet-stream' },
      body: await readFile(join(dir, 'euid')),
    });
    assert.equal(put.status, 201, await put.text());
    assert.equal((await sh('id -u', 'user')).stdout.trim(), '1000');
    assert.equal((await sh('/usr/local/bin/euid', 'user')).stdout.trim(), '1000', 'without the setuid bit: the caller');
    assert.equal((await sh('chown root:root /usr/local/bin/euid && chmod 4755 /usr/local/bin/euid')).exit, 0);
    assert.equal((await sh('/usr/local/bin/euid', 'user')).stdout.trim(), '0', 'setuid root takes effect inside');
  });

  test('an install an older forkd left open is closed at the next start', async () => {
    await stopDaemonProcess(daemon, 'SIGTERM');
    const state = cfg.config.stateDir;
    for (const p of [state, join(state, 'bundles'), join(state, 'bundles', id), cfg.config.stagingDir, cfg.config.runDir, join(cfg.config.runDir, 'netns')]) await chmod(p, 0o755);
    for (const f of ['pool.img', 'forkd.db', 'control.db', 'node.pid', join('bundles', id, 'config.json')]) await chmod(join(state, f), 0o644);
    daemon = await startDaemonProcess(cfg.env);
    for (const p of [state, join(state, 'bundles'), join(state, 'bundles', id), cfg.config.stagingDir, join(cfg.config.runDir, 'netns')]) assert.equal((await lstat(p)).mode & 0o777, 0o700, p);
    for (const f of ['pool.img', 'forkd.db', 'forkd.db-wal', 'control.db', 'node.pid', join('bundles', id, 'config.json')]) assert.equal((await lstat(join(state, f))).mode & 0o777, 0o600, f);
    assert.equal((await execHttp(url(), id, ['true'])).exit, 0, 'the sandbox runs on');
  });

  test('a staging dir another user made first stops the daemon with the fix named, and is left as it was', async () => {
    const other = await mkdtemp(join(tmpdir(), 'forkd-privacy-staging-'));
    const cfg2 = testConfig(other);
    try {
      await mkdir(cfg2.config.stagingDir, { mode: 0o700 });
      await chown(cfg2.config.stagingDir, OTHER_UID, OTHER_UID);
      const started = await startDaemonProcess(cfg2.env).catch((err: Error) => err);
      if (!(started instanceof Error)) {
        await stopDaemonProcess(started);
        assert.fail('the daemon started on a staging dir another user made');
      }
      assert.match(started.message, /error: FAILED_PRECONDITION: the CRIU staging directory \S+ is owned by uid 65534, not root/);
      assert.match(started.message, /rm -rf /);
      const st = await lstat(cfg2.config.stagingDir);
      assert.equal(st.uid, OTHER_UID);
      assert.equal(st.mode & 0o777, 0o700);
    } finally {
      await disposeNodeDir(undefined, other, cfg2.config);
    }
  });
});

describe('the CRIU staging dir is made exclusively and checked with lstat', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  before(async () => {
    dir = await mkdtemp(join('/dev/shm', 'forkd-staging-test-'));
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });
  const refused = (path: string, why: RegExp) =>
    assert.rejects(openStagingDir(path), (err: unknown) => err instanceof ForkdError && err.code === 'FAILED_PRECONDITION' && why.test(err.message) && err.message.includes(`rm -rf ${path}`));

  test('made 0700 by root when missing; an older forkd\'s 0755 one is closed', async () => {
    const p = join(dir, 'fresh');
    await openStagingDir(p);
    let st = await lstat(p);
    assert.ok(st.isDirectory() && st.uid === 0 && (st.mode & 0o777) === 0o700);
    await chmod(p, 0o755);
    await openStagingDir(p);
    st = await lstat(p);
    assert.equal(st.mode & 0o777, 0o700);
  });

  test('a symlink (even to a root-only directory) is refused and its target left alone', async () => {
    const target = join(dir, 'target');
    await mkdir(target, { mode: 0o755 });
    const p = join(dir, 'link');
    await symlink(target, p);
    await refused(p, /is a symbolic link/);
    assert.equal((await lstat(target)).mode & 0o777, 0o755);
  });

  test('another user\'s directory, a writable one, or a file is refused', async () => {
    const theirs = join(dir, 'theirs');
    await mkdir(theirs, { mode: 0o700 });
    await chown(theirs, OTHER_UID, OTHER_UID);
    await refused(theirs, /owned by uid 65534/);
    const open = join(dir, 'open');
    await mkdir(open);
    await chmod(open, 0o777);
    await refused(open, /writable by other users/);
    const file = join(dir, 'file');
    await writeFile(file, '');
    await refused(file, /is not a directory/);
  });

  test('a staging dir in a directory another user can rearrange is refused', async () => {
    const parent = join(dir, 'shared');
    await mkdir(parent);
    await chmod(parent, 0o777);
    await assert.rejects(openStagingDir(join(parent, 'staging')), (err: unknown) => err instanceof ForkdError && err.code === 'FAILED_PRECONDITION' && /another user could rearrange/.test(err.message));
    assert.ok(!existsSync(join(parent, 'staging')));
  });
});

describe('the CRIU action helper follows only root\'s own hook file', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let images = '';
  let control = '';
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-action-'));
    images = join(dir, 'images');
    control = join(dir, 'freezer.state');
  });
  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** A hook whose "freeze" writes FROZEN into a plain file (no cgroup needed); returns whether it was followed. */
  const attempt = async (prepare: (hook: string) => Promise<void>): Promise<{ code: number; stderr: string; followed: boolean }> => {
    await rm(images, { recursive: true, force: true });
    await mkdir(images, { mode: 0o700 });
    await writeFile(control, 'THAWED\n');
    const hook = join(images, 'forkd-hook');
    await writeFile(hook, [control, 'FROZEN', control, '^FROZEN'].join('\n') + '\n', { mode: 0o600 });
    await prepare(hook);
    const r = await exec(ACTION, [], { env: { ...process.env, CRTOOLS_SCRIPT_ACTION: 'pre-dump', CRTOOLS_IMAGE_DIR: images }, allowFailure: true, timeoutMs: 10_000 });
    return { code: r.code, stderr: r.stderr, followed: (await readFile(control, 'utf8')).startsWith('FROZEN') };
  };

  test('root\'s 0600 hook in a 0700 images dir is followed', async () => {
    const r = await attempt(async () => {});
    assert.equal(r.code, 0, r.stderr);
    assert.ok(r.followed);
  });

  const refusals: Array<[string, (hook: string) => Promise<void>, RegExp]> = [
    ['writable by others', (h) => chmod(h, 0o666), /writable by group or others/],
    ['writable by its group', (h) => chmod(h, 0o620), /writable by group or others/],
    ['owned by another user', (h) => chown(h, OTHER_UID, OTHER_UID), /not owned by root/],
    ['a symlink to root\'s own hook', async (h) => {
      await exec('mv', [h, `${h}.real`]);
      await symlink(`${h}.real`, h);
    }, /symbolic link/],
    ['in an images dir others can write', () => chmod(images, 0o777), /images dir .* writable by group or others/],
  ];
  for (const [what, prepare, why] of refusals) {
    test(`a hook file ${what} is refused and nothing is done`, async () => {
      const r = await attempt(prepare);
      assert.equal(r.code, 1);
      assert.match(r.stderr, why);
      assert.ok(!r.followed, 'the freeze control was not written');
    });
  }
});
