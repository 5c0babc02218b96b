import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { poolQuotas } from '../node/storage/quota-mode.js';

const MiB = 2 ** 20;
const REFUSED = /Disk quota exceeded|No space left/;
const fillCmd = (mb: number) => ['bash', '-c', `dd if=/dev/urandom of=/root/fill-$RANDOM bs=1M count=${mb} conv=fsync 2>&1; echo rc=\${PIPESTATUS[0]}`];
const noSimpleQuotas = !existsSync('/sys/fs/btrfs/features/simple_quota');

/**
 * A pool made with full qgroups (forkd before simple quotas, or
 * FORKD_QUOTA_MODE=full) is switched to simple quotas at the next start,
 * and back with FORKD_QUOTA_MODE=full; each switch keeps every sandbox's
 * files and limit (see ARCHITECTURE "Disk quotas", Switching).
 */
describe('switching a pool between full qgroups and simple quotas at start', { skip: (!isRoot && 'needs root') || (noSimpleQuotas && 'the kernel has no simple quotas') }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let t: ApiTarget;
  let pool = '';

  const start = async (mode: 'auto' | 'full') => {
    await stopDaemonProcess(daemon);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_QUOTA_MODE: mode, FORKD_SNAPSHOT_INTERVAL_S: '0', FORKD_IDLE_TIMEOUT_S: '0' });
    t = { url: daemon.url, apiKey: daemon.apiKey };
  };
  const fill = async (id: string, mb: number) => (await execHttp(t, id, fillCmd(mb))).stdout;
  const quota = async (id: string) => (await poolQuotas(pool))!.usage(join(pool, 'sandboxes', id));

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-quota-switch-'));
    cfg = testConfig(dir);
    pool = cfg.config.pool.mountPoint;
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('full qgroups → simple quotas → simple again → full: files and limits held by running and paused sandboxes', async () => {
    await start('full');
    assert.equal((await poolQuotas(pool))?.mode, 'full');
    const create = async () => {
      const r = await api(t, 'POST', '/v1/sandboxes', { diskMb: 64, memoryMb: 128 });
      assert.equal(r.status, 201, r.text);
      return r.json.id as string;
    };
    const running = await create();
    const paused = await create();
    assert.match(await fill(running, 24), /rc=0/);
    assert.equal((await api(t, 'POST', `/v1/sandboxes/${paused}/pause`, {})).status, 200);

    await start('auto');
    assert.equal((await poolQuotas(pool))?.mode, 'simple');
    assert.equal((await execHttp(t, running, ['bash', '-c', 'ls /root | grep -c fill-'])).stdout, '1\n');
    // The start-up check gave the running root its limit, on a lineage group of its own.
    const q = await quota(running);
    assert.match(q!.qgroup, /^1\//);
    assert.equal(q!.limitBytes, 64 * MiB);
    // What was written before the switch is charged to nobody: the sandbox has its whole quota, no more.
    assert.match(await fill(running, 100), REFUSED);
    assert.equal((await api(t, 'POST', `/v1/sandboxes/${paused}/resume`, {})).status, 200);
    assert.match(await fill(paused, 100), REFUSED);

    await start('auto');
    assert.equal((await poolQuotas(pool))?.mode, 'simple');
    assert.equal((await quota(running))?.limitBytes, 64 * MiB, 'a second start changes nothing');
    assert.match(await fill(running, 8), REFUSED);

    await start('full');
    assert.equal((await poolQuotas(pool))?.mode, 'full');
    assert.match((await quota(running))!.qgroup, /^0\//);
    assert.match(await fill(running, 100), REFUSED);
    const m = await api(t, 'GET', `/v1/sandboxes/${running}/metrics`);
    assert.equal(m.json.diskQuotaBytes, 64 * MiB);
    for (const id of [running, paused]) assert.equal((await api(t, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });
});
