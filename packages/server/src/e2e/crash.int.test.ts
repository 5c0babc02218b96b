import { mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { waitFor } from '../testing/helpers.js';
import { exec } from '../shared/exec.js';

const COUNTER = "import time\ni=0\nwhile True:\n  i+=1\n  open('/tmp/c.tmp','w').write(str(i))\n  __import__('os').rename('/tmp/c.tmp','/tmp/count')\n  time.sleep(0.02)";

/**
 * kill -9 of the daemon in the middle of a snapshot, a pause, a fork and a
 * rewind (FORKD_CRASH_AT): after a restart no half-made snapshot is listed,
 * nothing committed is lost, every sandbox is running, paused or failed.
 */
describe('crash safety of stateful operations', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let id = '';

  const restart = async (crashAt?: string, env: NodeJS.ProcessEnv = {}) => {
    await stopDaemonProcess(daemon);
    daemon = await startDaemonProcess({ ...cfg.env, ...env, ...(crashAt ? { FORKD_CRASH_AT: crashAt } : {}) });
    return daemon;
  };
  const crashDuring = async (crashAt: string, method: string, path: string, body?: unknown, env?: NodeJS.ProcessEnv) => {
    const d = await restart(crashAt, env);
    await fetch(d.url + path, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${d.apiKey}` }, body: body ? JSON.stringify(body) : null }).then(
      (r) => assert.fail(`expected the daemon to die, got ${r.status}`),
      () => {},
    );
    const c = daemon!.child;
    if (c.exitCode === null && c.signalCode === null) await new Promise((r) => c.once('exit', r));
    return restart();
  };
  const counter = async (url: ApiTarget) => Number((await execHttp(url, id, ['cat', '/tmp/count'])).stdout);
  const assertCounterRuns = async (url: ApiTarget, message?: string) => {
    const c1 = await counter(url);
    await new Promise((r) => setTimeout(r, 200));
    assert.ok((await counter(url)) > c1, message);
  };
  const noTmpSnapshots = async () => {
    const names = await readdir(join(cfg.config.pool.mountPoint, 'snapshots')).catch(() => [] as string[]);
    assert.deepEqual(names.filter((n) => n.startsWith('.tmp-')), [], 'no half-made snapshot left on disk');
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-crash-'));
    cfg = testConfig(dir);
    const url = await restart();
    id = (await api(url, 'POST', '/v1/sandboxes', {})).json.id;
    const bg = await api(url, 'POST', `/v1/sandboxes/${id}/exec`, { cmd: ['python3', '-c', COUNTER], background: true, tag: 'counter' });
    assert.equal(bg.status, 201);
    await new Promise((r) => setTimeout(r, 300));
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('crash mid-snapshot (dumped, sandbox still frozen for a pause): it runs on, nothing half-made is listed', async () => {
    const url = await crashDuring('snapshot:dumped', 'POST', `/v1/sandboxes/${id}/pause`);
    const s = (await api(url, 'GET', `/v1/sandboxes/${id}`)).json;
    assert.equal(s.state, 'running');
    assert.deepEqual((await api(url, 'GET', `/v1/sandboxes/${id}/snapshots`)).json.snapshots, []);
    await noTmpSnapshots();
    await assertCounterRuns(url, 'thawed: the counter runs');
  });

  test('crash mid-pause (recorded, processes not yet stopped): it is paused and resumes', async () => {
    const url = await crashDuring('pause:recorded', 'POST', `/v1/sandboxes/${id}/pause`);
    assert.equal((await api(url, 'GET', `/v1/sandboxes/${id}`)).json.state, 'paused');
    const snaps = (await api(url, 'GET', `/v1/sandboxes/${id}/snapshots`)).json.snapshots;
    assert.equal(snaps.length, 1);
    assert.equal((await api(url, 'POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    await assertCounterRuns(url);
  });

  test('crash mid-fork: no half-made fork is listed, the parent is untouched', async () => {
    const url = await crashDuring('fork:restored', 'POST', `/v1/sandboxes/${id}/fork`, { count: 2 });
    const list = (await api(url, 'GET', '/v1/sandboxes')).json.sandboxes;
    assert.deepEqual(
      list.map((s: { id: string }) => s.id),
      [id],
    );
    assert.equal(list[0].state, 'running');
    await noTmpSnapshots();
    assert.ok((await counter(url)) > 0);
  });

  const instances = async () => (await readdir(join(cfg.config.pool.mountPoint, 'sandboxes'))).filter((n) => n.startsWith(id));
  const rewindSnapshots = async (url: ApiTarget): Promise<Array<{ id: string }>> =>
    (await api(url, 'GET', `/v1/sandboxes/${id}/snapshots`)).json.snapshots.filter((x: { reason: string }) => x.reason === 'rewind');
  /** A named snapshot to rewind to, then a file written after it. */
  const targetThenFile = async (name: string, file: string) => {
    const target = (await api(daemon!, 'POST', `/v1/sandboxes/${id}/snapshots`, { name })).json;
    await execHttp(daemon!, id, ['bash', '-c', `echo ${file} > /tmp/${file}`]);
    return target as { id: string };
  };

  test('crash mid-rewind, target restored but not switched to: the sandbox runs on where it was', async () => {
    const target = await targetThenFile('before-restored', 'after');
    const kept = (await rewindSnapshots(daemon!)).length;
    const url = await crashDuring('rewind:restored', 'POST', `/v1/sandboxes/${id}/rewind`, { snapshot: target.id });
    assert.equal((await api(url, 'GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    assert.equal((await execHttp(url, id, ['test', '-e', '/tmp/after'])).exit, 0, 'still at the state it was left in');
    await assertCounterRuns(url, 'thawed: the counter runs');
    assert.equal((await rewindSnapshots(url)).length, kept, 'the state left was not dumped yet (it is the state the sandbox runs on): not listed');
    assert.equal((await instances()).length, 1, 'the restored target instance was removed');
    await noTmpSnapshots();
  });

  test('crash mid-rewind, just switched: the sandbox runs at the target, the state left is kept', async () => {
    const target = await targetThenFile('before-switched', 'after2');
    const kept = (await rewindSnapshots(daemon!)).length;
    const url = await crashDuring('rewind:switched', 'POST', `/v1/sandboxes/${id}/rewind`, { snapshot: target.id });
    assert.equal((await api(url, 'GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    assert.equal((await execHttp(url, id, ['test', '-e', '/tmp/after2'])).exit, 1, 'at the target: the later file is gone');
    await assertCounterRuns(url, 'the counter runs');
    const lefts = await rewindSnapshots(url);
    assert.equal(lefts.length, kept + 1, 'the state left behind is kept');
    const left = lefts.at(-1)!;
    assert.equal((await instances()).length, 1, 'the instance left was removed');
    await noTmpSnapshots();
    // Its dump was not taken at the crash: the restart took it from the frozen tree, so one can rewind forward.
    assert.equal((await api(url, 'POST', `/v1/sandboxes/${id}/rewind`, { snapshot: left.id })).status, 200);
    assert.equal((await execHttp(url, id, ['cat', '/tmp/after2'])).stdout, 'after2\n', 'forward again');
    const stored = (await api(url, 'GET', `/v1/snapshots/${left.id}`)).json;
    assert.ok(stored.sizeBytes > 0, `its size is recorded: ${JSON.stringify(stored)}`);
  });

  test('crash after a rewind answered, the state left dumped but not yet published: the restart dumps it again from the frozen tree', async () => {
    const target = await targetThenFile('before-dumped', 'after4');
    const kept = (await rewindSnapshots(daemon!)).length;
    const d = await restart('rewind:left-dumped');
    assert.equal((await api(d, 'POST', `/v1/sandboxes/${id}/rewind`, { snapshot: target.id })).status, 200, 'the rewind answers before its dump');
    const c = d.child;
    if (c.exitCode === null && c.signalCode === null) await new Promise((r) => c.once('exit', r));
    const url = await restart();
    assert.equal((await execHttp(url, id, ['test', '-e', '/tmp/after4'])).exit, 1, 'at the target');
    const lefts = await rewindSnapshots(url);
    assert.equal(lefts.length, kept + 1, 'the state left is kept');
    assert.equal((await instances()).length, 1, 'the instance left was released after its dump');
    await noTmpSnapshots();
    assert.equal((await api(url, 'POST', `/v1/sandboxes/${id}/rewind`, { snapshot: lefts.at(-1)!.id })).status, 200);
    assert.equal((await execHttp(url, id, ['cat', '/tmp/after4'])).stdout, 'after4\n', 'forward again: the state left, whole');
    await assertCounterRuns(url, 'the counter runs');
  });

  test('crash mid-rewind of a paused sandbox: the rewind is committed; it resumes at the target', async () => {
    const target = await targetThenFile('before-paused', 'after3');
    assert.equal((await api(daemon!, 'POST', `/v1/sandboxes/${id}/pause`)).json.state, 'paused');
    const url = await crashDuring('rewind:recorded', 'POST', `/v1/sandboxes/${id}/rewind`, { snapshot: target.id });
    assert.ok(['paused', 'running'].includes((await api(url, 'GET', `/v1/sandboxes/${id}`)).json.state));
    // An exec resumes it transparently at the target: the later file is gone.
    assert.equal((await execHttp(url, id, ['test', '-e', '/tmp/after3'])).exit, 1);
    await noTmpSnapshots();
  });

  test('crash mid-resume, its lazy-pages daemon started, runc not yet run: the daemon goes with it (none left waiting for ever); it is paused and resumes', async () => {
    assert.equal((await api(daemon!, 'POST', `/v1/sandboxes/${id}/pause`)).json.state, 'paused');
    // Every restore lazy (the counter's images are small), and no hot window: the resume restores.
    const url = await crashDuring('restore:helpers-started', 'POST', `/v1/sandboxes/${id}/resume`, undefined, { FORKD_LAZY_RESTORE_MIN_MB: '0', FORKD_HOT_PAUSE_S: '0' });
    assert.equal((await api(url, 'GET', `/v1/sandboxes/${id}`)).json.state, 'paused');
    const ours = async () => (await exec('ps', ['-eo', 'args'])).stdout.split('\n').filter((l) => l.includes(' lazy-pages ') && l.includes(dir));
    await waitFor(async () => (await ours()).length === 0, 5_000, 'no lazy-pages daemon of ours left');
    assert.equal((await api(url, 'POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    await assertCounterRuns(url);
  });

  // Last: the counter does not survive it.
  test('crash mid filesystem-only pause (recorded, processes not yet stopped): it is paused, no snapshot was made, it resumes cold with its files', async () => {
    await counter(daemon!);
    const before = (await api(daemon!, 'GET', `/v1/sandboxes/${id}/snapshots`)).json.snapshots.length;
    const url = await crashDuring('pause:recorded', 'POST', `/v1/sandboxes/${id}/pause`, { memory: false });
    assert.equal((await api(url, 'GET', `/v1/sandboxes/${id}`)).json.state, 'paused');
    assert.equal((await api(url, 'GET', `/v1/sandboxes/${id}/snapshots`)).json.snapshots.length, before, 'no snapshot taken');
    assert.equal((await api(url, 'POST', `/v1/sandboxes/${id}/resume`)).json.state, 'running');
    const c = await counter(url);
    assert.ok(c > 0, 'its files: the counter file is there');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await counter(url), c, 'started cold: the counter process is gone');
    await noTmpSnapshots();
  });
});
