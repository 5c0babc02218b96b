import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp } from '../../testing/http-client.js';
import { exec as execFile } from '../../shared/exec.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../../testing/test-node.js';

describe('daemon restart', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig> | undefined;
  let daemon: DaemonProcess | undefined;
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir && cfg) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('kill -9 while sandboxes run: after restart they are listed and usable', async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-restart-'));
    cfg = testConfig(dir);
    const env = cfg.env;
    daemon = await startDaemonProcess(env);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await api(daemon, 'POST', '/v1/sandboxes', { memoryMb: 128 });
      assert.equal(r.status, 201, r.text);
      ids.push(r.json.id);
    }
    const bg = await api(daemon, 'POST', `/v1/sandboxes/${ids[0]}/exec`, { command: 'echo before > /tmp/marker; sleep 10000', background: true, tag: 'sleeper' });
    assert.equal(bg.status, 201, bg.text);

    await stopDaemonProcess(daemon, 'SIGKILL');
    daemon = await startDaemonProcess(env);

    const list = await api(daemon, 'GET', '/v1/sandboxes');
    assert.deepEqual(
      list.json.sandboxes.map((s: { id: string }) => s.id).sort(),
      [...ids].sort(),
    );
    assert.ok(list.json.sandboxes.every((s: { state: string }) => s.state === 'running'));
    for (const id of ids) assert.equal((await execHttp(daemon, id, ['hostname'])).stdout, `${id}\n`);
    assert.equal((await execHttp(daemon, ids[0]!, ['cat', '/tmp/marker'])).stdout, 'before\n');
    const procs = await api(daemon, 'GET', `/v1/sandboxes/${ids[0]}/processes`);
    assert.ok(procs.json.processes.some((p: { tag?: string; running: boolean }) => p.tag === 'sleeper' && p.running));
    for (const id of ids) assert.equal((await api(daemon, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('a filesystem-only pause across a kill -9: still paused after the restart, resumes cold with its files, id, limits, env and disk quota', async () => {
    const created = await api(daemon!, 'POST', '/v1/sandboxes', { memoryMb: 128, diskMb: 300, env: { KEPT: 'env' } });
    assert.equal(created.status, 201, created.text);
    const id = created.json.id as string;
    assert.equal((await api(daemon!, 'POST', `/v1/sandboxes/${id}/exec`, { command: 'echo files > /root/kept; sleep 10000', background: true, tag: 'sleeper' })).status, 201);
    await new Promise((r) => setTimeout(r, 300));
    const quota = (await api(daemon!, 'GET', `/v1/sandboxes/${id}/metrics`)).json.diskQuotaBytes;
    assert.equal(quota, 300 * 1024 * 1024, 'quotas are on (Btrfs qgroups)');
    const paused = await api(daemon!, 'POST', `/v1/sandboxes/${id}/pause`, { memory: false });
    assert.equal(paused.json.state, 'paused', paused.text);
    assert.deepEqual((await api(daemon!, 'GET', `/v1/sandboxes/${id}/snapshots`)).json.snapshots, [], 'no snapshot: its files are the state');

    await stopDaemonProcess(daemon, 'SIGKILL');
    daemon = await startDaemonProcess(cfg!.env);

    assert.equal((await api(daemon, 'GET', `/v1/sandboxes/${id}`)).json.state, 'paused', 'still paused after the restart');
    const resumed = await api(daemon, 'POST', `/v1/sandboxes/${id}/resume`);
    assert.equal(resumed.status, 200, resumed.text);
    assert.deepEqual([resumed.json.id, resumed.json.state, resumed.json.limits.memoryMb, resumed.json.limits.diskMb, resumed.json.env], [id, 'running', 128, 300, { KEPT: 'env' }]);
    assert.equal((await execHttp(daemon, id, ['cat', '/root/kept'])).stdout, 'files\n');
    assert.equal((await execHttp(daemon, id, ['sh', '-c', 'echo $KEPT'])).stdout, 'env\n');
    const procs = await api(daemon, 'GET', `/v1/sandboxes/${id}/processes`);
    assert.ok(!procs.json.processes.some((p: { tag?: string }) => p.tag === 'sleeper'), 'the processes of before are gone');
    assert.equal((await execHttp(daemon, id, ['sh', '-c', 'cat /proc/[0-9]*/comm 2>/dev/null | grep -cx sleep || true'])).stdout, '0\n');
    assert.equal((await api(daemon, 'GET', `/v1/sandboxes/${id}/metrics`)).json.diskQuotaBytes, quota, 'the disk quota holds');
    assert.equal((await api(daemon, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('a hot pause across a kill -9: the start-up check drops its frozen tree, and the resume restores the pause snapshot', async () => {
    const created = await api(daemon!, 'POST', '/v1/sandboxes', { memoryMb: 128 });
    const id = created.json.id as string;
    assert.equal((await api(daemon!, 'POST', `/v1/sandboxes/${id}/exec`, { command: 'echo hot > /tmp/marker; sleep 10000', background: true, tag: 'sleeper' })).status, 201);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal((await api(daemon!, 'POST', `/v1/sandboxes/${id}/pause`)).json.state, 'paused');
    const runcState = async () => (await execFile('runc', ['--root', join(dir, 'run', 'runc'), 'state', id], { allowFailure: true })).code;
    assert.equal(await runcState(), 0, 'the hot pause kept its frozen tree');

    await stopDaemonProcess(daemon, 'SIGKILL');
    daemon = await startDaemonProcess(cfg!.env);

    assert.equal((await api(daemon, 'GET', `/v1/sandboxes/${id}`)).json.state, 'paused', 'still paused after the restart');
    assert.notEqual(await runcState(), 0, 'the start-up check destroyed the frozen tree');
    assert.equal((await api(daemon, 'POST', `/v1/sandboxes/${id}/resume`)).status, 200);
    assert.equal((await execHttp(daemon, id, ['cat', '/tmp/marker'])).stdout, 'hot\n');
    const procs = await api(daemon, 'GET', `/v1/sandboxes/${id}/processes`);
    assert.ok(procs.json.processes.some((p: { tag?: string; running: boolean }) => p.tag === 'sleeper' && p.running), 'restored with its processes');
    assert.equal((await api(daemon, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });
});
