import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';

/** The mount layout of before: /dev (and on cgroup v1 /sys/fs/cgroup) a tmpfs that CRIU archives. */
const OLD_LAYOUT = { FORKD_DEV_IN_ROOT: '0', FORKD_CGROUP_V1_BINDS: '0' };

/**
 * A sandbox's mounts are in its snapshots' images, so an upgrade that
 * changes them (oci-spec.ts devMounts, cgroupMounts) meets snapshots and
 * paused sandboxes of the old layout, and a downgrade meets the new one.
 * Each must restore, fork and rewind under the other, with what the sandbox
 * kept in /dev/shm.
 */
describe('snapshots of one sandbox mount layout restore under the other', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  const restart = async (env: NodeJS.ProcessEnv) => {
    await stopDaemonProcess(daemon);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_SNAPSHOT_INTERVAL_S: '0', ...env });
  };
  const sh = async (id: string, script: string) => (await execHttp(daemon!, id, ['sh', '-c', script])).stdout;
  const post = async (path: string, body: object = {}) => {
    const r = await api(daemon!, 'POST', path, body);
    assert.ok(r.status < 300, `${path}: ${r.status} ${r.text}`);
    return r.json;
  };
  const tmpfsArchives = async (snap: string) => (await readdir(join(cfg.config.pool.mountPoint, 'snapshots', snap, 'memory'))).filter((f) => f.startsWith('tmpfs-'));
  const tmpfsMounts = (id: string) => sh(id, "awk '$3 == \"tmpfs\" {print $2}' /proc/mounts");
  const shmAndSleeper = (id: string) => sh(id, 'cat /dev/shm/kept; pgrep -x sleep >/dev/null && echo sleeping; test -c /dev/null && echo null');

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-layout-'));
    cfg = testConfig(dir);
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('old layout to new (an upgrade), then new to old (a downgrade)', async () => {
    await restart(OLD_LAYOUT);
    const old = (await post('/v1/sandboxes', { memoryMb: 128 })).id as string;
    await post(`/v1/sandboxes/${old}/exec`, { command: 'echo old > /dev/shm/kept; sleep 10000', background: true });
    await new Promise((r) => setTimeout(r, 300));
    assert.match(await tmpfsMounts(old), /^\/dev$/m);
    const oldSnap = (await post(`/v1/sandboxes/${old}/snapshots`)).id as string;
    assert.ok((await tmpfsArchives(oldSnap)).length >= 1, 'the old layout archives /dev');
    await post(`/v1/sandboxes/${old}/pause`);

    await restart({});
    await post(`/v1/sandboxes/${old}/resume`);
    assert.equal(await shmAndSleeper(old), 'old\nsleeping\nnull\n', 'a paused sandbox of the old layout resumes');
    const [fork] = (await post(`/v1/snapshots/${oldSnap}/fork`, { count: 1 })).sandboxes as { id: string }[];
    assert.ok(fork);
    assert.equal(await shmAndSleeper(fork.id), 'old\nsleeping\nnull\n', 'a snapshot of the old layout forks');
    await sh(old, 'echo later > /dev/shm/kept');
    await post(`/v1/sandboxes/${old}/rewind`, { snapshot: oldSnap });
    assert.equal(await shmAndSleeper(old), 'old\nsleeping\nnull\n', 'and rewinds');
    // Dumped again under the new layout's config: it still holds what it was restored with.
    const again = (await post(`/v1/sandboxes/${old}/snapshots`)).id as string;
    const [refork] = (await post(`/v1/snapshots/${again}/fork`, { count: 1 })).sandboxes as { id: string }[];
    assert.ok(refork);
    assert.equal(await shmAndSleeper(refork.id), 'old\nsleeping\nnull\n', 'a snapshot taken after the upgrade forks');

    const fresh = (await post('/v1/sandboxes', { memoryMb: 128 })).id as string;
    await post(`/v1/sandboxes/${fresh}/exec`, { command: 'echo new > /dev/shm/kept; sleep 10000', background: true });
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await tmpfsMounts(fresh), '', 'the new layout has no tmpfs');
    const newSnap = (await post(`/v1/sandboxes/${fresh}/snapshots`)).id as string;
    assert.deepEqual(await tmpfsArchives(newSnap), [], 'nothing archived');
    await post(`/v1/sandboxes/${fresh}/pause`);

    await restart(OLD_LAYOUT);
    await post(`/v1/sandboxes/${fresh}/resume`);
    assert.equal(await shmAndSleeper(fresh), 'new\nsleeping\nnull\n', 'a paused sandbox of the new layout resumes under the old');
    const [back] = (await post(`/v1/snapshots/${newSnap}/fork`, { count: 1 })).sandboxes as { id: string }[];
    assert.ok(back);
    assert.equal(await shmAndSleeper(back.id), 'new\nsleeping\nnull\n', 'and forks');
  });

  test('each lever alone: runc\'s cgroup v1 tmpfs with /dev in the root, and the reverse, fork and rewind', async () => {
    for (const env of [{ FORKD_CGROUP_V1_BINDS: '0' }, { FORKD_DEV_IN_ROOT: '0' }]) {
      await restart(env);
      const id = (await post('/v1/sandboxes', { memoryMb: 128 })).id as string;
      await post(`/v1/sandboxes/${id}/exec`, { command: 'echo one > /dev/shm/kept; sleep 10000', background: true });
      await new Promise((r) => setTimeout(r, 300));
      const snap = (await post(`/v1/sandboxes/${id}/snapshots`)).id as string;
      const [f] = (await post(`/v1/snapshots/${snap}/fork`, { count: 1 })).sandboxes as { id: string }[];
      assert.ok(f);
      assert.equal(await shmAndSleeper(f.id), 'one\nsleeping\nnull\n', `${JSON.stringify(env)}: a fork`);
      await sh(id, 'echo two > /dev/shm/kept');
      await post(`/v1/sandboxes/${id}/rewind`, { snapshot: snap });
      assert.equal(await shmAndSleeper(id), 'one\nsleeping\nnull\n', `${JSON.stringify(env)}: a rewind`);
    }
  });
});
