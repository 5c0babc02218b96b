import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { runCli, startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { waitFor } from '../testing/helpers.js';

/** NDJSON events of an answer read whole. */
function events(text: string): any[] {
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe('tenancy fails closed (real daemon, real template build)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let acme: ApiTarget;
  let beta: ApiTarget;
  let dflt: ApiTarget;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-tenancy-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_WARM_POOL: '0' });
    const key = async (body: object) => ({ url: daemon.url, apiKey: (await api(daemon, 'POST', '/v1/keys', body)).json.key as string });
    acme = await key({ tenant: 'acme' });
    beta = await key({ tenant: 'beta' });
    dflt = await key({});
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('another tenant\'s template build sandbox is unreachable from the default tenant; its name cannot be raced for', async () => {
    // acme's build holds a secret while it runs; the build waits for a file the test writes, so the attack runs mid-build.
    const build = api(acme, 'POST', '/v1/templates', { name: 'acme-tpl', setup: ['echo acme-secret > /root/secret && for i in $(seq 600); do [ -e /tmp/go ] && exit 0; sleep 0.1; done; exit 1'] });
    let buildId = '';
    await waitFor(
      async () => {
        // Listed from `creating` on, already acme's; waited for until it runs its setup command.
        buildId = (await api(acme, 'GET', '/v1/sandboxes')).json.sandboxes.find((s: { state: string; template: string }) => s.template === 'base' && s.state === 'running')?.id ?? '';
        return buildId !== '';
      },
      60_000,
      'acme sees its own build sandbox',
    );
    // The attack: the default tenant (a plain key, and the admin key) lists, reads and execs into the build sandbox.
    for (const k of [dflt, { url: daemon.url, apiKey: daemon.apiKey }]) {
      assert.ok(!(await api(k, 'GET', '/v1/sandboxes')).json.sandboxes.some((s: { id: string }) => s.id === buildId), 'not listed');
      assert.equal((await api(k, 'GET', `/v1/sandboxes/${buildId}`)).json.error.code, 'NOT_FOUND');
      const exec = await api(k, 'POST', `/v1/sandboxes/${buildId}/exec`, { cmd: ['cat', '/root/secret'] });
      assert.equal(exec.json.error.code, 'NOT_FOUND');
      assert.doesNotMatch(exec.text, /acme-secret/);
      assert.equal((await api(k, 'GET', `/v1/sandboxes/${buildId}/files?path=/root/secret`)).json.error.code, 'NOT_FOUND');
    }
    // The race: beta builds the same name while acme's build runs.
    const raced = await api(beta, 'POST', '/v1/templates', { name: 'acme-tpl', setup: ['true'] });
    assert.equal(events(raced.text).at(-1).error.code, 'ALREADY_EXISTS');
    // The building tenant reaches its own build sandbox (the legitimate use), and lets the build finish.
    assert.equal((await execHttp(acme, buildId, ['cat', '/root/secret'])).stdout, 'acme-secret\n');
    await execHttp(acme, buildId, ['touch', '/tmp/go']);
    const done = events((await build).text).at(-1);
    assert.equal(done.type, 'done', JSON.stringify(done));
    assert.equal(events((await api(beta, 'POST', '/v1/templates', { name: 'acme-tpl', setup: ['true'] })).text).at(-1).error.code, 'ALREADY_EXISTS');
    assert.equal((await api(beta, 'POST', '/v1/sandboxes', { template: 'acme-tpl' })).json.error.code, 'NOT_FOUND');
    const s = (await api(acme, 'POST', '/v1/sandboxes', { template: 'acme-tpl' })).json;
    assert.equal((await execHttp(acme, s.id, ['cat', '/root/secret'])).stdout, 'acme-secret\n');
    // A fork is its source tenant's from the start, and reachable by no one else.
    const [fork] = (await api(acme, 'POST', `/v1/sandboxes/${s.id}/fork`, { count: 1 })).json.sandboxes;
    assert.equal((await api(dflt, 'GET', `/v1/sandboxes/${fork.id}`)).json.error.code, 'NOT_FOUND');
    assert.equal((await execHttp(acme, fork.id, ['cat', '/root/secret'])).stdout, 'acme-secret\n');
  });

  test('an operator sees every tenant (ls --all-tenants) and acts as one with x-forkd-tenant; only admin keys may; the audit keeps who', async () => {
    const admin = { url: daemon.url, apiKey: daemon.apiKey };
    const a = (await api(acme, 'POST', '/v1/sandboxes', { template: 'base' })).json.id as string;
    const b = (await api(beta, 'POST', '/v1/sandboxes', { template: 'base' })).json.id as string;
    assert.equal((await api(acme, 'GET', '/v1/sandboxes?allTenants=true')).json.error.code, 'PERMISSION_DENIED');
    const all = (await api(admin, 'GET', '/v1/sandboxes?allTenants=true')).json.sandboxes as { id: string; tenant?: string }[];
    assert.equal(all.find((s) => s.id === a)?.tenant, 'acme');
    assert.equal(all.find((s) => s.id === b)?.tenant, 'beta');
    const cli = await runCli(daemon.url, { FORKD_API_KEY: daemon.apiKey }, ['ls', '--all-tenants']);
    assert.equal(cli.code, 0, cli.stderr);
    assert.match(cli.stdout, /^ID\s+TENANT\s+TEMPLATE/m);
    assert.match(cli.stdout, new RegExp(`${b}\\s+beta\\s+base`));
    const as = (t: { url: string; apiKey: string }, tenant: string, method: string, path: string) => fetch(t.url + path, { method, headers: { authorization: `Bearer ${t.apiKey}`, 'x-forkd-tenant': tenant } });
    // A plain key naming a tenant is refused, not ignored.
    assert.equal((await as(acme, 'beta', 'GET', `/v1/sandboxes/${b}`)).status, 403);
    // The admin, as beta: beta's sandbox and nothing of acme's.
    assert.equal((await as(admin, 'beta', 'GET', `/v1/sandboxes/${b}`)).status, 200);
    assert.equal((await as(admin, 'beta', 'GET', `/v1/sandboxes/${a}`)).status, 404);
    const del = await runCli(daemon.url, { FORKD_API_KEY: daemon.apiKey, FORKD_TENANT: 'beta' }, ['rm', b]);
    assert.equal(del.code, 0, del.stderr);
    assert.equal((await api(beta, 'GET', `/v1/sandboxes/${b}`)).json.error.code, 'NOT_FOUND');
    const audit = (await api(admin, 'GET', `/v1/audit?sandbox=${b}&limit=50`)).json.records as { tenant?: string; keyId?: string; operation: string }[];
    const byAdmin = audit.find((r) => r.operation.startsWith('DELETE'));
    assert.equal(byAdmin?.tenant, 'beta');
    assert.notEqual(byAdmin?.keyId, undefined);
    await api(acme, 'DELETE', `/v1/sandboxes/${a}`);
  });
});
