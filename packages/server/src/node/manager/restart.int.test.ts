import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp } from '../../testing/http-client.js';
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
});
