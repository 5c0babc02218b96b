import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { CLI, NODE_FLAGS, startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { forgetRuntimeState, killAllSandboxProcesses } from '../testing/host-crash.js';
import { JUMP, JUMPED, JUMPING_COUNTER } from '../testing/counter.js';
import { cgroupDirs } from '../node/cgroups/cgroups.js';
import { waitFor } from '../testing/helpers.js';

const GHOST = 'sbx-ghost0000000';

/**
 * A host crash: the daemon SIGKILLed and every sandbox process killed. After
 * the daemon starts again each sandbox is back under its id: from the latest
 * snapshot of its line whose images are intact (memory and files of that
 * instant), or cold from its files when it has none; the event log says so
 * and how much work was lost. With recovery on start off, they wait, lost,
 * for a resume or a rewind.
 */
describe('recovery after a host crash (real CRIU, real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  const ids = { a: '', b: '', c: '', d: '' };
  /** Snapshots by name, and the time the test took them. */
  const snaps: Record<string, { id: string; createdAt: string }> = {};

  const d = (): ApiTarget => daemon!;
  const sh = async (id: string, script: string) => {
    const r = await execHttp(d(), id, ['bash', '-c', script]);
    assert.equal(r.exit, 0, `${script}: ${r.stdout}`);
    return r.stdout;
  };
  const exists = async (id: string, path: string) => (await execHttp(d(), id, ['test', '-e', path])).exit === 0;
  const count = async (id: string) => Number((await execHttp(d(), id, ['cat', '/tmp/count'])).stdout);
  const countAt = async (snap: string) => Number(await readFile(join(cfg.config.pool.mountPoint, 'snapshots', snap, 'rootfs/tmp/count'), 'utf8'));
  const assertCounterRuns = async (id: string) => {
    const c = await count(id);
    await waitFor(async () => (await count(id)) > c, 5000, `the counter of ${id} to go on`);
  };
  const snapshot = async (id: string, name: string) => {
    const r = await api(d(), 'POST', `/v1/sandboxes/${id}/snapshots`, { name });
    assert.equal(r.status, 201, r.text);
    snaps[name] = r.json;
    return r.json.id as string;
  };
  const withCounter = async () => {
    const id = (await api(d(), 'POST', '/v1/sandboxes', { memoryMb: 256 })).json.id as string;
    assert.equal((await api(d(), 'POST', `/v1/sandboxes/${id}/exec`, { cmd: JUMPING_COUNTER, background: true, tag: 'counter' })).status, 201);
    await waitFor(async () => (await count(id)) > 5, 5000, 'the counter to start');
    return id;
  };
  const sandbox = async (id: string) => (await api(d(), 'GET', `/v1/sandboxes/${id}`)).json;
  const cli = async (...args: string[]) => (await promisify(execFile)(process.execPath, [...NODE_FLAGS, CLI, ...args], { env: { ...process.env, FORKD_URL: d().url, FORKD_API_KEY: d().apiKey } })).stdout;

  /** Power loss: daemon and every sandbox process SIGKILLed; `reboot` also empties /run (runc state, namespaces). */
  const crash = async (opts: { reboot: boolean }) => {
    await stopDaemonProcess(daemon, 'SIGKILL');
    await killAllSandboxProcesses(cfg.env.FORKD_CGROUP_PARENT!);
    if (opts.reboot) await forgetRuntimeState(cfg.config);
  };
  const start = async (env: NodeJS.ProcessEnv = {}) => {
    daemon = await startDaemonProcess({ ...cfg.env, ...env });
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-recovery-'));
    cfg = testConfig(dir);
    await start();
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('crash with runc state left: every sandbox runs again under its id, from its latest usable snapshot or cold', async () => {
    // a: two snapshots, a file after each, then a jump only its memory knows of.
    ids.a = await withCounter();
    await sh(ids.a, 'echo 1 > /tmp/a1');
    await snapshot(ids.a, 'a-one');
    await sh(ids.a, 'echo 2 > /tmp/a2');
    await snapshot(ids.a, 'a-two');
    await sh(ids.a, 'echo 3 > /tmp/a3');
    assert.equal((await execHttp(d(), ids.a, JUMP)).exit, 0);
    await waitFor(async () => (await count(ids.a)) > JUMPED, 5000, 'the counter to jump');
    // b: no snapshot at all.
    ids.b = (await api(d(), 'POST', '/v1/sandboxes', { memoryMb: 128 })).json.id;
    await sh(ids.b, 'echo kept > /root/b1');
    // c: its latest snapshot's images will be lost with staging, as on a reboot.
    ids.c = await withCounter();
    await sh(ids.c, 'echo 1 > /tmp/c1');
    await snapshot(ids.c, 'c-one');
    await sh(ids.c, 'echo 2 > /tmp/c2');
    await snapshot(ids.c, 'c-two');
    // d: rewound to its first snapshot: the state the rewind left (newer) is not its line.
    ids.d = await withCounter();
    await sh(ids.d, 'echo 1 > /tmp/d1');
    await snapshot(ids.d, 'd-one');
    await sh(ids.d, 'echo 2 > /tmp/d2');
    await snapshot(ids.d, 'd-two');
    assert.equal((await api(d(), 'POST', `/v1/sandboxes/${ids.d}/rewind`, { snapshot: snaps['d-one']!.id })).status, 200);
    await sh(ids.d, 'echo 3 > /tmp/d3');
    // Time goes by after a's last snapshot: that is the work the crash loses.
    await new Promise((r) => setTimeout(r, 1000));

    await crash({ reboot: false });
    const staging = cfg.config.stagingDir;
    await writeFile(join(cfg.config.pool.mountPoint, 'snapshots', snaps['c-two']!.id, 'staged'), join(staging, snaps['c-two']!.id));
    // Leftovers of interrupted operations, for the start to clean.
    await mkdir(join(staging, 'snap-junk00000000'), { recursive: true });
    await writeFile(join(staging, 'snap-junk00000000', 'pages-1.img'), 'x');
    await mkdir(join(cfg.config.pool.mountPoint, 'snapshots', '.tmp-snap-junk00000001', 'memory'), { recursive: true });
    await mkdir(join(cfg.config.stateDir, 'bundles', GHOST), { recursive: true });
    const parent = cfg.env.FORKD_CGROUP_PARENT!;
    for (const p of new Set(Object.values(cgroupDirs(`${parent}/${GHOST}`)))) await mkdir(p, { recursive: true });
    await start();

    for (const id of Object.values(ids)) assert.equal((await sandbox(id)).state, 'running', `${id} runs again`);
    const a = await sandbox(ids.a);
    assert.equal(a.recovered.fromSnapshot, snaps['a-two']!.id);
    assert.ok(a.recovered.lostSeconds >= 1, `work lost since its snapshot: ${JSON.stringify(a.recovered)}`);
    const c = await count(ids.a);
    assert.ok(c >= (await countAt(snaps['a-two']!.id)) && c < JUMPED, `the counter goes on from its last snapshot: ${c}`);
    await assertCounterRuns(ids.a);
    assert.deepEqual([await exists(ids.a, '/tmp/a1'), await exists(ids.a, '/tmp/a2'), await exists(ids.a, '/tmp/a3')], [true, true, false], 'files of that snapshot');

    const b = await sandbox(ids.b);
    assert.equal(b.recovered.fromSnapshot, undefined, 'started cold');
    assert.equal(await sh(ids.b, 'cat /root/b1'), 'kept\n', 'with its files');

    assert.equal((await sandbox(ids.c)).recovered.fromSnapshot, snaps['c-one']!.id, 'the latest snapshot whose images are intact');
    assert.deepEqual([await exists(ids.c, '/tmp/c1'), await exists(ids.c, '/tmp/c2')], [true, false]);
    await assertCounterRuns(ids.c);

    assert.equal((await sandbox(ids.d)).recovered.fromSnapshot, snaps['d-one']!.id, 'the snapshot its current state began from');
    assert.deepEqual([await exists(ids.d, '/tmp/d1'), await exists(ids.d, '/tmp/d2'), await exists(ids.d, '/tmp/d3')], [true, false, false]);
    await assertCounterRuns(ids.d);

    // The event log (audit), as `forkd logs` shows it.
    const records = (await api(d(), 'GET', `/v1/audit?sandbox=${ids.a}&limit=1000`)).json.records as Array<{ operation: string; code: string; target?: string; tenant?: string }>;
    const lost = records.find((r) => r.operation === 'lost');
    const recovered = records.find((r) => r.operation === 'recover');
    assert.match(lost?.target ?? '', /gone when the daemon started/);
    assert.equal(recovered?.code, 'OK');
    assert.match(recovered?.target ?? '', new RegExp(`from snapshot ${snaps['a-two']!.id} .*: [0-9.]+ s of work lost`));
    assert.equal(recovered?.tenant, 'default');
    assert.match(await cli('logs', ids.a), new RegExp(`recover brought back \\(start\\) from snapshot ${snaps['a-two']!.id}`));
    const ls = await cli('ls');
    assert.match(ls, new RegExp(`${ids.a} .*running \\(recovered \\d+[smhd] ago from ${snaps['a-two']!.id}, [0-9.]+s lost\\)`));
    assert.match(ls, new RegExp(`${ids.b} .*running \\(recovered \\d+[smhd] ago cold from its files`));

    // Nothing left of the interrupted operations.
    assert.deepEqual(await readdir(staging).catch(() => []), [], 'no staging directory left');
    assert.ok(!existsSync(join(cfg.config.pool.mountPoint, 'snapshots', '.tmp-snap-junk00000001')));
    assert.ok(!existsSync(join(cfg.config.stateDir, 'bundles', GHOST)));
    for (const p of new Set(Object.values(cgroupDirs(`${parent}/${GHOST}`)))) assert.ok(!existsSync(p), `cgroup ${p} removed`);
    assert.equal((await api(d(), 'GET', `/v1/snapshots/${snaps['c-two']!.id}`)).status, 404, 'the snapshot that lost its images is gone');
  });

  test('crash with /run emptied and recovery on start off: sandboxes wait, lost; resume and rewind bring them back', async () => {
    await snapshot(ids.a, 'a-three');
    await sh(ids.a, 'echo 4 > /tmp/a4');
    await snapshot(ids.b, 'b-one');
    await sh(ids.b, 'echo 2 > /root/b2');

    await crash({ reboot: true });
    await start({ FORKD_RECOVER_ON_START: '0' });

    for (const id of Object.values(ids)) {
      const s = await sandbox(id);
      assert.equal(s.state, 'failed');
      assert.match(s.error, /processes were lost/);
    }
    // Their dead processes' runtime leftovers are gone even so; their files are kept.
    const parent = cfg.env.FORKD_CGROUP_PARENT!;
    for (const p of new Set(Object.values(cgroupDirs(parent)))) assert.deepEqual((await readdir(p, { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name), [], `no cgroup left in ${p}`);
    assert.deepEqual((await readdir(join(cfg.config.stateDir, 'bundles'))).filter((n) => !n.startsWith('.')), [], 'no bundle left');
    assert.equal((await api(d(), 'POST', `/v1/sandboxes/${ids.a}/exec`, { cmd: ['true'] })).json.error.code, 'FAILED_PRECONDITION');

    const resumed = await api(d(), 'POST', `/v1/sandboxes/${ids.a}/resume`);
    assert.equal(resumed.status, 200, resumed.text);
    assert.equal(resumed.json.state, 'running');
    assert.equal(resumed.json.recovered.fromSnapshot, snaps['a-three']!.id);
    assert.ok((await count(ids.a)) >= (await countAt(snaps['a-three']!.id)));
    await assertCounterRuns(ids.a);
    assert.deepEqual([await exists(ids.a, '/tmp/a2'), await exists(ids.a, '/tmp/a4')], [true, false]);

    const rewound = await api(d(), 'POST', `/v1/sandboxes/${ids.b}/rewind`, { snapshot: snaps['b-one']!.id });
    assert.equal(rewound.status, 200, rewound.text);
    assert.equal(rewound.json.recovered.fromSnapshot, snaps['b-one']!.id);
    assert.equal(await sh(ids.b, 'cat /root/b1; test ! -e /root/b2 && echo no-b2'), 'kept\nno-b2\n');
    const ops = ((await api(d(), 'GET', `/v1/audit?sandbox=${ids.b}&limit=1000`)).json.records as Array<{ operation: string; target?: string }>).map((r) => r.operation);
    assert.ok(ops.filter((o) => o === 'lost').length === 2 && ops.filter((o) => o === 'recover').length === 2, ops.join(', '));

    // A sandbox failed this way can still be deleted as it is.
    for (const id of [ids.c, ids.d]) assert.equal((await api(d(), 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });
});
