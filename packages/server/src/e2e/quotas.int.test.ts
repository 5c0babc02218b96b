import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, beforeEach, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { CLI, NODE_FLAGS, startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { parseMemTotalMb } from '../node/manager/host-capacity.js';

const MEM_TOTAL_MB = parseMemTotalMb(readFileSync('/proc/meminfo', 'utf8'));
/** Small enough that one large create fills it; the quota tests' small sandboxes stay far below. */
const OVERCOMMIT = 0.25;
const SMALL = { memoryMb: 128 };

/** A refusal as the tenant sees it: 429, the code, the limit named in the message and in details. */
function assertExhausted(r: { status: number; json: any }, limit: string): void {
  assert.equal(r.status, 429, JSON.stringify(r.json));
  assert.equal(r.json.error.code, 'RESOURCE_EXHAUSTED');
  assert.equal(r.json.error.details?.limit, limit, JSON.stringify(r.json));
  assert.ok(r.json.error.message.includes(limit), r.json.error.message);
}

describe('tenant quotas, node admission and per-sandbox maxima (real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let admin: ApiTarget;
  let acme: ApiTarget;
  let beta: ApiTarget;
  let betaSandbox = '';

  const create = (t: ApiTarget, body: object = SMALL) => api(t, 'POST', '/v1/sandboxes', body);
  const setLimits = async (tenant: string, limits: object) => {
    const r = await api(admin, 'PUT', `/v1/tenants/${tenant}/limits`, limits);
    assert.equal(r.status, 200, r.text);
    return r.json;
  };
  const deleteAll = async (t: ApiTarget) => {
    for (const s of (await api(t, 'GET', '/v1/sandboxes')).json.sandboxes) assert.equal((await api(t, 'DELETE', `/v1/sandboxes/${s.id}`)).status, 204);
  };
  /** After every refusal: the daemon answers and the neighbour tenant's sandbox works. */
  const neighbourWorks = async () => {
    assert.equal((await api(admin, 'GET', '/v1/health')).json.ok, true);
    assert.equal((await execHttp(beta, betaSandbox, ['echo', 'ok'])).stdout, 'ok\n');
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-quotas-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({
      ...cfg.env,
      FORKD_WARM_POOL: '0',
      FORKD_SNAPSHOT_INTERVAL_S: '0',
      FORKD_IDLE_TIMEOUT_S: '0',
      FORKD_TENANT_MAX_SANDBOXES: '3',
      FORKD_MEMORY_OVERCOMMIT: String(OVERCOMMIT),
      FORKD_MAX_CPUS: '1',
      FORKD_MAX_PIDS: '4096',
    });
    admin = { url: daemon.url, apiKey: daemon.apiKey };
    const key = async (body: object) => ({ url: daemon.url, apiKey: (await api(admin, 'POST', '/v1/keys', body)).json.key as string });
    acme = await key({ tenant: 'acme' });
    beta = await key({ tenant: 'beta' });
    const b = await create(beta);
    assert.equal(b.status, 201, b.text);
    betaSandbox = b.json.id;
  });
  // Each case starts from nothing of acme's, whatever the one before left.
  beforeEach(async () => {
    if (!acme) return;
    await deleteAll(acme);
    await setLimits('acme', {});
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('only admin keys set limits; a tenant reads its own, with the server default (FORKD_TENANT_MAX_SANDBOXES)', async () => {
    const denied = await api(acme, 'PUT', '/v1/tenants/acme/limits', { runningSandboxes: 1000 });
    assert.equal(denied.status, 403);
    assert.equal(denied.json.error.code, 'PERMISSION_DENIED');
    assert.equal((await api(acme, 'GET', '/v1/tenants/beta/limits')).json.error.code, 'PERMISSION_DENIED');
    const own = (await api(beta, 'GET', '/v1/tenants/beta/limits')).json;
    assert.equal(own.limits.runningSandboxes, 3);
    assert.deepEqual(own.overrides, {});
    assert.equal(own.usage.runningSandboxes, 1);
    assert.equal(own.usage.memoryMb, 128);
  });

  test('running sandboxes: creates racing for the last slot, exactly one wins; a delete frees a slot', async () => {
    await setLimits('acme', { runningSandboxes: 2 });
    assert.equal((await create(acme)).status, 201);
    const raced = await Promise.all([create(acme), create(acme), create(acme)]);
    assert.equal(raced.filter((r) => r.status === 201).length, 1, raced.map((r) => r.text).join('\n'));
    for (const r of raced.filter((r) => r.status !== 201)) assertExhausted(r, 'runningSandboxes');
    assert.equal((await api(acme, 'GET', '/v1/sandboxes')).json.sandboxes.length, 2, 'nothing half-made by a refusal');
    await neighbourWorks();
    const [first] = (await api(acme, 'GET', '/v1/sandboxes')).json.sandboxes;
    assert.equal((await api(acme, 'DELETE', `/v1/sandboxes/${first.id}`)).status, 204);
    const next = await create(acme);
    assert.equal(next.status, 201, next.text);
    assert.equal((await execHttp(acme, next.json.id, ['echo', 'mine'])).stdout, 'mine\n');
    await deleteAll(acme);
  });

  test('a fork of N counts N, and is refused whole', async () => {
    await setLimits('acme', { runningSandboxes: 3 });
    const src = (await create(acme)).json;
    const refused = await api(acme, 'POST', `/v1/sandboxes/${src.id}/fork`, { count: 3 });
    assertExhausted(refused, 'runningSandboxes');
    assert.equal((await api(acme, 'GET', '/v1/sandboxes')).json.sandboxes.length, 1);
    const forked = await api(acme, 'POST', `/v1/sandboxes/${src.id}/fork`, { count: 2 });
    assert.equal(forked.status, 201, forked.text);
    assert.equal(forked.json.sandboxes.length, 2);
    await neighbourWorks();
    await deleteAll(acme);
  });

  test('memory, snapshots and disk limits; a resume counts again', async () => {
    await setLimits('acme', { memoryMb: 256, snapshots: 2, diskMb: 20480 });
    const a = (await create(acme)).json;
    assertExhausted(await create(acme, { memoryMb: 160 }), 'memoryMb');
    const b = (await create(acme)).json;
    // Paused: its memory is free again; resumed, it counts again.
    assert.equal((await api(acme, 'POST', `/v1/sandboxes/${b.id}/pause`)).json.state, 'paused');
    const c = await create(acme);
    assertExhausted(c, 'diskMb'); // paused sandboxes keep their disk: 2 × 10240 MB
    await setLimits('acme', { memoryMb: 256, snapshots: 2 });
    const c2 = (await create(acme)).json;
    assertExhausted(await api(acme, 'POST', `/v1/sandboxes/${b.id}/resume`), 'memoryMb');
    // The paused one's snapshot counts: one more is allowed, then none.
    assert.equal((await api(acme, 'POST', `/v1/sandboxes/${a.id}/snapshots`, {})).status, 201);
    assertExhausted(await api(acme, 'POST', `/v1/sandboxes/${a.id}/snapshots`, {}), 'snapshots');
    await neighbourWorks();
    assert.equal((await api(acme, 'DELETE', `/v1/sandboxes/${c2.id}`)).status, 204);
    const resumed = await api(acme, 'POST', `/v1/sandboxes/${b.id}/resume`);
    assert.equal(resumed.json.state, 'running', resumed.text);
    const usage = (await api(acme, 'GET', '/v1/tenants/acme/limits')).json.usage;
    assert.deepEqual(usage, { runningSandboxes: 2, memoryMb: 256, cpus: 2, snapshots: 2, diskMb: 20480 });
    await deleteAll(acme);
    await setLimits('acme', {});
  });

  test('node admission: a create that would overcommit the host\'s memory is refused, for every tenant', async () => {
    const big = Math.floor(MEM_TOTAL_MB * OVERCOMMIT) + 1;
    const r = await create(acme, { memoryMb: big });
    assertExhausted(r, 'FORKD_MEMORY_OVERCOMMIT');
    assert.equal(r.json.error.details.hostMb, undefined, 'the host\'s numbers are the operator\'s');
    const asAdmin = await create(admin, { memoryMb: big });
    assertExhausted(asAdmin, 'FORKD_MEMORY_OVERCOMMIT');
    assert.equal(asAdmin.json.error.details.hostMb, MEM_TOTAL_MB);
    // Room for one more half-size sandbox only.
    const half = Math.floor((MEM_TOTAL_MB * OVERCOMMIT) / 2);
    const ok = await create(acme, { memoryMb: half });
    assert.equal(ok.status, 201, ok.text);
    assertExhausted(await create(beta, { memoryMb: half }), 'FORKD_MEMORY_OVERCOMMIT');
    await neighbourWorks();
    await deleteAll(acme);
    assert.equal((await create(beta, { memoryMb: half })).status, 201);
    const mine = (await api(beta, 'GET', '/v1/sandboxes')).json.sandboxes.filter((s: { id: string }) => s.id !== betaSandbox);
    for (const s of mine) await api(beta, 'DELETE', `/v1/sandboxes/${s.id}`);
  });

  test('per-sandbox maxima: memory above the host, CPUs and pids above FORKD_MAX_* are INVALID_ARGUMENT naming the maximum', async () => {
    const cases: [object, string, number][] = [
      [{ memoryMb: MEM_TOTAL_MB + 1 }, 'FORKD_MAX_MEMORY_MB', MEM_TOTAL_MB],
      [{ ...SMALL, cpus: 2 }, 'FORKD_MAX_CPUS', 1],
      [{ ...SMALL, pids: 8192 }, 'FORKD_MAX_PIDS', 4096],
    ];
    for (const [body, limit, max] of cases) {
      const r = await create(acme, body);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.json.error.code, 'INVALID_ARGUMENT');
      assert.equal(r.json.error.details.limit, limit);
      assert.equal(r.json.error.details.max, max);
      assert.match(r.json.error.message, new RegExp(`${limit}`));
    }
    // At the maxima: made, with the rlimits every sandbox gets (no core files; bounded files and processes).
    const s = await create(acme, { ...SMALL, cpus: 1, pids: 4096 });
    assert.equal(s.status, 201, s.text);
    const limits = (await execHttp(acme, s.json.id, ['bash', '-c', 'ulimit -c; ulimit -Hc; ulimit -n; ulimit -u'])).stdout.split('\n');
    assert.equal(limits[0], '0');
    assert.equal(limits[1], '0');
    assert.ok(Number(limits[2]) > 0 && Number(limits[2]) <= 65536, limits[2]);
    assert.ok(Number(limits[3]) > 0 && Number(limits[3]) <= 65536, limits[3]);
    await deleteAll(acme);
  });

  test('the CLI shows and sets limits', async () => {
    const cli = (args: string[], apiKey: string) => promisify(execFile)(process.execPath, [...NODE_FLAGS, CLI, ...args], { env: { ...process.env, FORKD_URL: daemon.url, FORKD_API_KEY: apiKey } });
    const set = await cli(['tenants', 'limits', 'acme', '--sandboxes', '7', '--memory', 'unlimited', '--json'], admin.apiKey);
    const info = JSON.parse(set.stdout);
    assert.equal(info.limits.runningSandboxes, 7);
    assert.deepEqual(info.overrides, { runningSandboxes: 7, memoryMb: null });
    const shown = await cli(['tenants', 'limits', 'acme'], acme.apiKey);
    assert.match(shown.stdout, /runningSandboxes\s+7\s+0\s+tenant/);
    await assert.rejects(cli(['tenants', 'limits', 'acme', '--sandboxes', '100'], acme.apiKey), (e: { stderr: string }) => /PERMISSION_DENIED|admin/.test(e.stderr));
    await cli(['tenants', 'limits', 'acme', '--reset'], admin.apiKey);
    assert.deepEqual((await api(acme, 'GET', '/v1/tenants/acme/limits')).json.overrides, {});
  });
});
