import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { startE2bDaemon, type E2bDaemon } from '../testing/e2b-daemon.js';
import { stopDaemonProcess } from '../testing/daemon-process.js';
import { assertStillServing } from '../testing/still-serving.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';

/** The last NDJSON line of a template build: `done` with the template, or `error`. */
async function build(t: ApiTarget, name: string): Promise<{ name: string; id: string }> {
  const r = await api(t, 'POST', '/v1/templates', { name, setup: ['true'] });
  const last = JSON.parse(r.text.trim().split('\n').at(-1)!);
  assert.equal(last.type, 'done', r.text);
  return last.template;
}

/** An exec's outcome: its stdout, or the error code that refused it. */
async function run(t: ApiTarget, id: string, cmd: string[]): Promise<string> {
  const r = await api(t, 'POST', `/v1/sandboxes/${id}/exec`, { cmd });
  if (r.status !== 200) return r.json?.error?.code ?? `HTTP ${r.status}`;
  return (await execHttp(t, id, cmd)).stdout;
}

/**
 * Template identity is per tenant (issue 23, item 6): a template's policy,
 * default network and warm-pool members key on the tenant and a template id
 * never reused, so a template deleted and made again under its name (by
 * another tenant) governs nothing of the old one's sandboxes, and the new
 * one's sandboxes get nothing of the old one's.
 */
describe('adversarial: templates deleted and made again under the same name', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let e2b: E2bDaemon;
  let acme: ApiTarget;
  let beta: ApiTarget;
  let admin: ApiTarget;
  let gamma: ApiTarget;
  let neighbour = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-adv-tpl-'));
    cfg = testConfig(dir);
    e2b = await startE2bDaemon({ ...cfg.env, FORKD_WARM_POOL: '0' }, 'acme');
    admin = { url: e2b.daemon.url, apiKey: e2b.daemon.apiKey };
    const key = async (tenant: string) => ({ url: e2b.daemon.url, apiKey: (await api(admin, 'POST', '/v1/keys', { tenant })).json.key as string });
    acme = await key('acme');
    beta = await key('beta');
    gamma = await key('gamma');
    neighbour = (await api(gamma, 'POST', '/v1/sandboxes', {})).json.id;
  });
  after(async () => {
    await stopDaemonProcess(e2b.daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test("acme's sandboxes of a deleted template stay under acme's rules after beta builds the name with `deny .*`; beta's get none of acme's", async () => {
    const old = await build(acme, 'shared-name');
    const rule = { exec: { deny: ['^cat /etc/hostname$'] } };
    assert.equal((await api(acme, 'PUT', '/v1/templates/shared-name/policy', rule)).status, 200);
    const mine = (await api(acme, 'POST', '/v1/sandboxes', { template: 'shared-name' })).json.id as string;
    assert.equal(await run(acme, mine, ['cat', '/etc/hostname']), 'PERMISSION_DENIED', "acme's template rule applies");
    assert.equal((await api(acme, 'DELETE', '/v1/templates/shared-name')).status, 204);

    // The attack: beta takes the name and gives it a policy refusing everything.
    const theirs = await build(beta, 'shared-name');
    assert.equal((await api(beta, 'PUT', '/v1/templates/shared-name/policy', { exec: { deny: ['.*'] } })).status, 200);
    assert.equal(await run(acme, mine, ['echo', 'still-mine']), 'still-mine\n', "beta's policy does not govern acme's sandbox");
    assert.equal(await run(acme, mine, ['cat', '/etc/hostname']), 'PERMISSION_DENIED', "acme's own template rule still does (deleting the template lifts nothing)");
    assert.notEqual(theirs.id, old.id, 'a new template, a new id');
    const info = (await api(acme, 'GET', `/v1/sandboxes/${mine}`)).json;
    assert.deepEqual([info.template, info.templateId], ['shared-name', old.id]);

    // What acme does with its sandbox keeps working, under the same rules: fork, snapshot and rewind, pause and resume.
    const [fork] = (await api(acme, 'POST', `/v1/sandboxes/${mine}/fork`, { count: 1 })).json.sandboxes;
    assert.equal(await run(acme, fork.id, ['echo', 'fork']), 'fork\n');
    assert.equal(await run(acme, fork.id, ['cat', '/etc/hostname']), 'PERMISSION_DENIED');
    const snap = (await api(acme, 'POST', `/v1/sandboxes/${mine}/snapshots`, {})).json;
    assert.equal((await api(acme, 'POST', `/v1/sandboxes/${mine}/rewind`, { snapshot: snap.id })).status, 200);
    assert.equal((await api(acme, 'POST', `/v1/sandboxes/${mine}/pause`, {})).status, 200);
    assert.equal((await api(acme, 'POST', `/v1/sandboxes/${mine}/resume`, {})).status, 200);
    assert.equal(await run(acme, mine, ['echo', 'resumed']), 'resumed\n');
    assert.equal(await run(acme, mine, ['cat', '/etc/hostname']), 'PERMISSION_DENIED');

    // The reverse: beta's sandboxes of its template get beta's policy, never acme's old one.
    const b = (await api(beta, 'POST', '/v1/sandboxes', { template: 'shared-name' })).json.id as string;
    assert.equal(await run(beta, b, ['echo', 'x']), 'PERMISSION_DENIED', "beta's own policy applies to beta's sandbox");
    assert.equal((await api(beta, 'PUT', '/v1/templates/shared-name/policy', {})).status, 200);
    assert.match(await run(beta, b, ['cat', '/etc/hostname']), /^[a-z0-9-]+\n$/, "acme's old rule does not reach beta's sandbox");

    await assertStillServing(gamma, neighbour, e2b.daemon.child);
  });

  test("a template's default network does not pass to a later template of its name (deleted through the E2B API), nor a shared template's from one tenant to another", async () => {
    await build(acme, 'net-name');
    const egress = { mode: 'egress', allowOut: ['0.0.0.0/0'], denyOut: [] };
    assert.equal((await api(acme, 'PUT', '/v1/templates/net-name/network', { network: egress })).status, 200);
    assert.equal((await api(acme, 'POST', '/v1/sandboxes', { template: 'net-name' })).json.network?.mode, 'egress', "acme's default applies to acme's creates");
    // Deleted through the E2B API (no REST route to tidy up after it).
    const del = await fetch(`${e2b.apiUrl}/templates/net-name`, { method: 'DELETE', headers: { 'x-api-key': e2b.key } });
    assert.equal(del.status, 204, await del.text());
    await build(beta, 'net-name');
    const b = (await api(beta, 'POST', '/v1/sandboxes', { template: 'net-name' })).json;
    assert.equal(b.network, undefined, "beta's sandbox gets no network from acme's old default");
    assert.deepEqual((await api(beta, 'GET', '/v1/templates/net-name/network')).json.network, null);

    // `base` is shared: an admin's setting for acme governs acme only.
    assert.equal((await api(admin, 'PUT', '/v1/templates/base/policy?tenant=acme', { exec: { deny: ['^echo base-denied$'] } })).status, 200);
    assert.equal((await api(admin, 'PUT', '/v1/templates/base/network?tenant=acme', { network: egress })).status, 200);
    const a = (await api(acme, 'POST', '/v1/sandboxes', {})).json;
    const c = (await api(beta, 'POST', '/v1/sandboxes', {})).json;
    assert.deepEqual([a.network?.mode, c.network], ['egress', undefined]);
    assert.equal(await run(acme, a.id, ['echo', 'base-denied']), 'PERMISSION_DENIED');
    assert.equal(await run(beta, c.id, ['echo', 'base-denied']), 'base-denied\n');
    assert.deepEqual((await api(beta, 'GET', '/v1/templates/base/policy')).json.policy, {}, "beta reads its own, not acme's");
    assert.equal((await api(beta, 'PUT', '/v1/templates/base/policy', {})).json.error.code, 'PERMISSION_DENIED', 'a shared template\'s policy is set by admin keys only');
    assert.equal((await api(beta, 'GET', '/v1/templates/base/policy?tenant=acme')).json.error.code, 'PERMISSION_DENIED');

    await assertStillServing(gamma, neighbour, e2b.daemon.child);
  });
});
