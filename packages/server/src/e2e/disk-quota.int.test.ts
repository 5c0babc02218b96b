import { spawn } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { CLI, NODE_FLAGS, startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { forgetRuntimeState, killAllSandboxProcesses } from '../testing/host-crash.js';
import { exec } from '../shared/exec.js';
import { poolQuotas } from '../node/storage/quota-mode.js';

const MiB = 2 ** 20;

function forkd(env: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...NODE_FLAGS, CLI, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

/** `dd` of incompressible data as root in the sandbox; its output and exit status. */
const fillCmd = (mb: number) => ['bash', '-c', `dd if=/dev/urandom of=/root/fill-$RANDOM bs=1M count=${mb} conv=fsync 2>&1; echo rc=\${PIPESTATUS[0]}`];

describe('disk quotas through the CLI and the API (real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let t: ApiTarget;
  let env: NodeJS.ProcessEnv;
  let viaApi = '';

  const start = async () => {
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_SNAPSHOT_INTERVAL_S: '0', FORKD_IDLE_TIMEOUT_S: '0', FORKD_DEFAULT_DISK_MB: '4096' });
    t = { url: daemon.url, apiKey: daemon.apiKey };
    env = { ...cfg.env, FORKD_URL: daemon.url, FORKD_API_KEY: daemon.apiKey };
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-disk-'));
    cfg = testConfig(dir);
    await start();
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('forkd create --disk sets the quota; forkd metrics shows used vs limit', async () => {
    const c = await forkd(env, ['create', '--disk', '48', '--memory', '128', '--json']);
    assert.equal(c.code, 0, c.stderr);
    const id = JSON.parse(c.stdout).id as string;
    assert.equal((await api(t, 'GET', `/v1/sandboxes/${id}`)).json.limits.diskMb, 48);
    assert.match((await execHttp(t, id, fillCmd(100))).stdout, /Disk quota exceeded|No space left/);
    const m = await forkd(env, ['metrics', id, '--json']);
    assert.equal(m.code, 0, m.stderr);
    assert.equal(JSON.parse(m.stdout).diskQuotaBytes, 48 * MiB);
    const plain = await forkd(env, ['metrics', id]);
    assert.match(plain.stdout, /^disk quota .+ \/ .+\(beyond its template\)$/m);
    assert.equal((await forkd(env, ['create', '--disk', '0'])).code !== 0, true, 'the CLI refuses --disk 0');
    assert.equal((await api(t, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('diskMb through the API: the server default, bad values refused, forks inherit it', async () => {
    const dflt = await api(t, 'POST', '/v1/sandboxes', { memoryMb: 128 });
    assert.equal(dflt.status, 201, dflt.text);
    assert.equal(dflt.json.limits.diskMb, 4096, 'FORKD_DEFAULT_DISK_MB');
    assert.equal((await api(t, 'DELETE', `/v1/sandboxes/${dflt.json.id}`)).status, 204);
    const count = async () => (await api(t, 'GET', '/v1/sandboxes')).json.sandboxes.length as number;
    const before = await count();
    for (const diskMb of [0, -5, 1.5, 2 ** 40, 'lots']) {
      const r = await api(t, 'POST', '/v1/sandboxes', { diskMb });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, 'INVALID_ARGUMENT');
      assert.match(r.json.error.message, /diskMb/);
    }
    const big = await api(t, 'POST', '/v1/sandboxes', { diskMb: 16 * 1024 * 1024 });
    assert.equal(big.status, 429, big.text);
    assert.match(big.json.error.message, /FORKD_DISK_OVERCOMMIT/);
    assert.equal(await count(), before);

    const r = await api(t, 'POST', '/v1/sandboxes', { diskMb: 40, memoryMb: 128 });
    assert.equal(r.status, 201, r.text);
    viaApi = r.json.id;
    const f = await api(t, 'POST', `/v1/sandboxes/${viaApi}/fork`, { count: 1 });
    assert.equal(f.status, 201, f.text);
    assert.equal(f.json.sandboxes[0].limits.diskMb, 40);
    assert.match((await execHttp(t, f.json.sandboxes[0].id, fillCmd(100))).stdout, /Disk quota exceeded|No space left/);
    assert.equal((await api(t, 'DELETE', `/v1/sandboxes/${f.json.sandboxes[0].id}`)).status, 204);
  });

  test('after a daemon crash and restart the quota still holds and nothing written is lost', async () => {
    assert.match((await execHttp(t, viaApi, fillCmd(8))).stdout, /rc=0/);
    // As if the root were from a version before quotas: the restart gives it its limit.
    const quotas = (await poolQuotas(cfg.config.pool.mountPoint))!;
    const root = join(cfg.config.pool.mountPoint, 'sandboxes', viaApi);
    await quotas.setLimit((await quotas.usage(root))!.qgroup, undefined);
    await stopDaemonProcess(daemon, 'SIGKILL');
    await start();
    assert.ok((await quotas.usage(root))?.limitBytes, 'the limit is back after the restart');
    const m = await api(t, 'GET', `/v1/sandboxes/${viaApi}/metrics`);
    assert.equal(m.status, 200, m.text);
    assert.equal(m.json.diskQuotaBytes, 40 * MiB);
    assert.equal((await execHttp(t, viaApi, ['bash', '-c', 'ls /root | grep -c fill-'])).stdout, '1\n');
    assert.match((await execHttp(t, viaApi, fillCmd(100))).stdout, /Disk quota exceeded|No space left/);
    assert.equal((await api(t, 'GET', '/v1/health')).json.ok, true);
  });

  test('a host crash: the sandbox comes back from its snapshot with its quota, and no empty stale qgroup is left', async () => {
    const snap = await api(t, 'POST', `/v1/sandboxes/${viaApi}/snapshots`, {});
    assert.equal(snap.status, 201, snap.text);
    await stopDaemonProcess(daemon, 'SIGKILL');
    await killAllSandboxProcesses(cfg.env.FORKD_CGROUP_PARENT!);
    await forgetRuntimeState(cfg.config);
    await start();
    const info = await api(t, 'GET', `/v1/sandboxes/${viaApi}`);
    assert.equal(info.json.state, 'running', info.text);
    assert.equal(info.json.recovered?.fromSnapshot, snap.json.id);
    assert.equal(info.json.limits.diskMb, 40);
    assert.match((await execHttp(t, viaApi, fillCmd(100))).stdout, /Disk quota exceeded|No space left/);
    const pool = cfg.config.pool.mountPoint;
    // Replaced and deleted roots: the kernel drops their qgroups with them (older ones: clear-stale at start).
    // Simple quotas keep the qgroup of a deleted root while a snapshot still shares what it wrote (its
    // bytes count in the sandbox's lineage group): such a qgroup is stale but not empty.
    await exec('btrfs', ['subvolume', 'sync', pool]);
    const qgroups = (await exec('btrfs', ['qgroup', 'show', '--raw', pool])).stdout;
    const stale = [...qgroups.matchAll(/^0\/\d+\s+(\d+)\s+\d+\s+<stale>$/gm)].map((m) => Number(m[1]));
    if ((await poolQuotas(pool))?.mode === 'simple') assert.ok(stale.every((bytes) => bytes > 0), qgroups);
    else assert.doesNotMatch(qgroups, /<stale>/);
  });
});
