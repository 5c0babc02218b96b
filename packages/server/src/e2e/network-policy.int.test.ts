import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { FETCH_PY, startTestInternet, type TestInternet } from '../testing/test-internet.js';

const [A, B] = ['203.0.113.2', '203.0.113.3'];

/** Tenants' network policies and templates' default networks, through the REST API of a real daemon. */
describe('network policy: tenant defaults and caps, template defaults (real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let internet: TestInternet;
  let admin: ApiTarget;
  let acme: ApiTarget;
  let beta: ApiTarget;

  const reaches = async (t: ApiTarget, id: string, addr: string) => (await execHttp(t, id, ['python3', '-c', FETCH_PY, `http://${addr}:8080/`])).stdout.trim() === `hello from ${addr}`;
  const create = async (t: ApiTarget, body: object) => {
    const r = await api(t, 'POST', '/v1/sandboxes', { memoryMb: 128, ...body });
    assert.equal(r.status, 201, r.text);
    return r.json as { id: string; network?: Record<string, unknown> };
  };
  const setPolicy = async (tenant: string, policy: object) => {
    const r = await api(admin, 'PUT', `/v1/tenants/${tenant}/network`, policy);
    assert.equal(r.status, 200, r.text);
    return r.json;
  };
  const assertDenied = (r: { status: number; json: any }, why: RegExp) => {
    assert.equal(r.status, 403, JSON.stringify(r.json));
    assert.equal(r.json.error.code, 'PERMISSION_DENIED');
    assert.match(r.json.error.message, why);
  };

  before(async () => {
    internet = await startTestInternet();
    dir = await mkdtemp(join(tmpdir(), 'forkd-netpolicy-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_WARM_POOL: '0', FORKD_SNAPSHOT_INTERVAL_S: '0', FORKD_IDLE_TIMEOUT_S: '0' });
    admin = { url: daemon.url, apiKey: daemon.apiKey };
    const key = async (body: object) => ({ url: daemon.url, apiKey: (await api(admin, 'POST', '/v1/keys', body)).json.key as string });
    acme = await key({ tenant: 'acme' });
    beta = await key({ tenant: 'beta' });
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    await internet?.close();
  });

  test('only admin keys set a policy; a tenant reads its own; bad input is INVALID_ARGUMENT', async () => {
    assertDenied(await api(acme, 'PUT', '/v1/tenants/acme/network', { egress: false }), /only an admin key/);
    assertDenied(await api(acme, 'GET', '/v1/tenants/beta/network'), /only an admin key/);
    assert.deepEqual((await api(acme, 'GET', '/v1/tenants/acme/network')).json, { tenant: 'acme', policy: {} });
    const bad = await api(admin, 'PUT', '/v1/tenants/acme/network', { maxConnections: 0, denyOut: ['nope/99'] });
    assert.equal(bad.status, 400, bad.text);
    assert.equal(bad.json.error.code, 'INVALID_ARGUMENT');
  });

  test("the tenant's default applies when a create names none; its forced denial beats a sandbox's allow, at create and on a change", async () => {
    await setPolicy('acme', { default: { mode: 'egress', denyOut: [`${B}/32`] }, denyOut: [`${A}/32`] });
    const d = await create(acme, {});
    assert.deepEqual(d.network, { mode: 'egress', allowOut: [], denyOut: [`${B}/32`], forcedDenyOut: [`${A}/32`] });
    assert.equal(await reaches(acme, d.id, B), false, "the default's denial");
    const s = await create(acme, { network: { mode: 'egress', allowOut: [`${A}/32`, `${B}/32`] } });
    assert.deepEqual(s.network?.forcedDenyOut, [`${A}/32`]);
    assert.equal(await reaches(acme, s.id, B), true, 'allowed');
    assert.equal(await reaches(acme, s.id, A), false, 'forced denial over the allow');
    const changed = await api(acme, 'PUT', `/v1/sandboxes/${s.id}/network`, { mode: 'egress', allowOut: [`${A}/32`] });
    assert.equal(changed.status, 200, changed.text);
    assert.deepEqual(changed.json.network.forcedDenyOut, [`${A}/32`], 'put back on a change');
    assert.equal(await reaches(acme, s.id, A), false, 'still denied after the change');
    // Another tenant: none of acme's policy.
    const other = await create(beta, { network: { mode: 'egress' } });
    assert.equal(other.network?.forcedDenyOut, undefined);
    assert.equal(await reaches(beta, other.id, A), true);
    for (const [t, id] of [[acme, d.id], [acme, s.id], [beta, other.id]] as const) assert.equal((await api(t, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('maxima: the default when none is asked, PERMISSION_DENIED above; a fork gets denials added since', async () => {
    await setPolicy('acme', { maxBandwidthMbps: 50, maxConnections: 4 });
    const s = await create(acme, { network: { mode: 'egress' } });
    assert.deepEqual(s.network, { mode: 'egress', allowOut: [], denyOut: [], bandwidthMbps: 50, maxConnections: 4 });
    assertDenied(await api(acme, 'POST', '/v1/sandboxes', { memoryMb: 128, network: { mode: 'egress', maxConnections: 5 } }), /maxConnections 5 is over the maximum 4/);
    assertDenied(await api(acme, 'PUT', `/v1/sandboxes/${s.id}/network`, { mode: 'egress', bandwidthMbps: 51 }), /bandwidthMbps 51 is over the maximum 50/);
    await setPolicy('acme', { maxBandwidthMbps: 50, maxConnections: 4, denyOut: [`${B}/32`] });
    const f = await api(acme, 'POST', `/v1/sandboxes/${s.id}/fork`, { count: 1 });
    assert.equal(f.status, 201, f.text);
    const fork = (f.json.sandboxes ?? f.json)[0] as { id: string; network?: Record<string, unknown> };
    assert.deepEqual(fork.network, { mode: 'egress', allowOut: [], denyOut: [], forcedDenyOut: [`${B}/32`], bandwidthMbps: 50, maxConnections: 4 });
    assert.equal(await reaches(acme, fork.id, B), false, "the fork follows the policy's new denial");
    assert.equal(await reaches(acme, fork.id, A), true);
    for (const id of [s.id, fork.id]) assert.equal((await api(acme, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test('egress forbidden: create, change and fork refused with PERMISSION_DENIED; none still works', async () => {
    await setPolicy('acme', {});
    const before = await create(acme, { network: { mode: 'egress' } });
    await setPolicy('acme', { egress: false });
    assertDenied(await api(acme, 'POST', '/v1/sandboxes', { memoryMb: 128, network: { mode: 'egress' } }), /egress is not allowed/);
    assertDenied(await api(acme, 'PUT', `/v1/sandboxes/${before.id}/network`, { mode: 'egress', denyOut: ['0.0.0.0/0'] }), /egress is not allowed/);
    assertDenied(await api(acme, 'POST', `/v1/sandboxes/${before.id}/fork`, { count: 1 }), /egress is not allowed/);
    const none = await create(acme, {});
    assert.equal(none.network, undefined);
    const off = await api(acme, 'PUT', `/v1/sandboxes/${before.id}/network`, { mode: 'none' });
    assert.equal(off.status, 200, off.text);
    for (const id of [before.id, none.id]) assert.equal((await api(acme, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
    await setPolicy('acme', {});
  });

  test("a template's default network: set by an admin for a shared template, used when a create names none, capped by the tenant", async () => {
    assertDenied(await api(beta, 'PUT', '/v1/templates/base/network', { network: { mode: 'egress' } }), /only an admin key sets the default network of shared template base/);
    // A shared template's default network is per tenant: the admin sets beta's.
    const put = await api(admin, 'PUT', '/v1/templates/base/network?tenant=beta', { network: { mode: 'egress', denyOut: [`${A}/32`], maxConnections: 3 } });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual((await api(beta, 'GET', '/v1/templates/base/network')).json, { template: 'base', network: { mode: 'egress', allowOut: [], denyOut: [`${A}/32`], maxConnections: 3 } });
    assert.equal((await api(acme, 'GET', '/v1/templates/base/network')).json.network, null, "beta's is not acme's");
    await setPolicy('beta', { default: { mode: 'none' }, maxBandwidthMbps: 20 });
    const s = await create(beta, {});
    assert.deepEqual(s.network, { mode: 'egress', allowOut: [], denyOut: [`${A}/32`], bandwidthMbps: 20, maxConnections: 3 }, "the template's over the tenant's default, the tenant's cap over both");
    assert.equal(await reaches(beta, s.id, A), false);
    assert.equal(await reaches(beta, s.id, B), true);
    const asked = await create(beta, { network: { mode: 'none' } });
    assert.equal(asked.network, undefined, "the request's over the template's");
    assert.equal((await api(admin, 'PUT', '/v1/templates/base/network?tenant=beta', { network: null })).json.network, null);
    assert.equal((await create(beta, {})).network, undefined, "removed: the tenant's default (none)");
    assert.equal((await api(beta, 'GET', '/v1/templates/nope/network')).status, 404);
  });

  test("a template built with a network: its owner's default, set when the build is done; deleting the template drops it", async () => {
    const built = await api(acme, 'POST', '/v1/templates', { name: 'acme-net', setup: ['true'], network: { mode: 'egress', denyOut: [`${B}/32`] } });
    const last = built.text.trim().split('\n').map((l) => JSON.parse(l) as { type: string }).at(-1);
    assert.equal(last?.type, 'done', built.text);
    assert.deepEqual((await api(acme, 'GET', '/v1/templates/acme-net/network')).json.network, { mode: 'egress', allowOut: [], denyOut: [`${B}/32`] });
    const s = await create(acme, { template: 'acme-net' });
    assert.equal(await reaches(acme, s.id, B), false);
    assert.equal(await reaches(acme, s.id, A), true);
    assert.equal((await api(beta, 'PUT', '/v1/templates/acme-net/network', { network: null })).status, 404, "another tenant's template");
    assert.equal((await api(acme, 'DELETE', `/v1/sandboxes/${s.id}`)).status, 204);
    assert.equal((await api(acme, 'DELETE', '/v1/templates/acme-net')).status, 204);
    assert.equal((await api(acme, 'GET', '/v1/templates/acme-net/network')).status, 404);
  });
});
