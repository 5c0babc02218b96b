import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { runCli, startDaemonProcess, stopDaemonProcess, type CliResult, type DaemonProcess } from '../testing/daemon-process.js';
import { CONNS_PY, TIMED_PY } from '../testing/net-probes.js';
import { FETCH_PY, startTestInternet, type TestInternet } from '../testing/test-internet.js';
import { GATEWAY_IP } from '../node/network/egress-nft.js';
import { exec } from '../shared/exec.js';

/** The CLI's contract for networking, against a real daemon, and the rules across a daemon restart. */
describe('network: CLI, API and a daemon restart', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let internet: TestInternet;
  let id = '';

  const forkd = (args: string[]): Promise<CliResult> => runCli(daemon!.url, cfg.env, args);
  const fetch = async (url: string) => (await forkd(['exec', id, '--', 'python3', '-c', FETCH_PY, url])).stdout.trim();
  const reaches = async (addr: string) => (await fetch(`http://${addr}:${internet.port}/`)) === `hello from ${addr}`;

  before(async () => {
    internet = await startTestInternet();
    dir = await mkdtemp(join(tmpdir(), 'forkd-net-'));
    cfg = testConfig(dir);
    cfg.env.FORKD_DNS_UPSTREAM = internet.dns;
    daemon = await startDaemonProcess(cfg.env);
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    await internet?.close();
  });

  const [A, B] = ['203.0.113.2', '203.0.113.3'];

  test('create --network egress --deny-out; network --json prints the rules', async () => {
    const r = await forkd(['create', '--memory', '128', '--network', 'egress', '--deny-out', `${B}/32`]);
    assert.equal(r.code, 0, r.stderr);
    id = r.stdout.trim();
    assert.deepEqual(JSON.parse((await forkd(['network', id, '--json'])).stdout), { mode: 'egress', allowOut: [], denyOut: [`${B}/32`] });
    assert.equal(await reaches(A), true);
    assert.equal(await reaches(B), false);
  });

  test("the sandbox cannot reach forkd's API through its gateway", async () => {
    const port = new URL(daemon!.url).port;
    assert.match(await fetch(`http://${GATEWAY_IP}:${port}/v1/sandboxes`), /^ERR/);
    assert.match(await fetch(`http://${internet.host}:${port}/v1/sandboxes`), /^ERR/);
  });

  test('network replaces the rules; the next connection follows them', async () => {
    const r = await forkd(['network', id, '--allow-out', B, '--deny-out', '203.0.113.0/24', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { mode: 'egress', allowOut: [B], denyOut: ['203.0.113.0/24'] });
    assert.equal(await reaches(B), true);
    assert.equal(await reaches(A), false);
  });

  test('a malformed domain rule is refused with a clear message', async () => {
    const r = await forkd(['network', id, '--allow-out', '*.exa mple.com']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /domain name/);
    const c = await forkd(['create', '--network', 'egress', '--deny-out', 'localhost']);
    assert.notEqual(c.code, 0);
    assert.match(c.stderr, /two labels/);
  });

  test('the rules survive a daemon restart (its start re-applies them, even without its table) and can still be changed', async () => {
    await stopDaemonProcess(daemon);
    // As a host firewall's reload would: the start-up check brings the rules back.
    await exec('nft', ['delete', 'table', 'inet', cfg.env.FORKD_NET_TABLE!]);
    daemon = await startDaemonProcess(cfg.env);
    assert.equal(await reaches(B), true);
    assert.equal(await reaches(A), false);
    assert.equal((await forkd(['network', id, '--mode', 'egress', '--deny-out', `${B}/32`])).code, 0);
    assert.equal(await reaches(A), true);
    assert.equal(await reaches(B), false);
    const none = await forkd(['network', id, '--mode', 'none']);
    assert.equal(none.stdout, 'mode none\n');
    assert.equal(await reaches(A), false);
  });

  test('domain rules through the CLI survive a daemon restart: its resolver and proxy (new ports) know the sandbox again', async () => {
    assert.equal((await forkd(['network', id, '--mode', 'egress', '--allow-out', 'a.test', '--deny-out', 'b.test'])).code, 0);
    const [nA, nB] = internet.named;
    const byName = async () => [await fetch('http://a.test/'), await fetch('http://b.test/'), await fetch(`http://${nB}/`)];
    const expected = [`hello from ${nA}`, 'ERR URLError', 'ERR HTTPError'];
    assert.deepEqual(await byName(), expected);
    await stopDaemonProcess(daemon);
    daemon = await startDaemonProcess(cfg.env);
    assert.deepEqual(await byName(), expected, 'after the restart');
  });

  test('network --bandwidth --max-connections: shown, enforced, and kept across a daemon restart', async () => {
    const r = await forkd(['network', id, '--mode', 'egress', '--bandwidth', '8', '--max-connections', '2', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { mode: 'egress', allowOut: [], denyOut: [], bandwidthMbps: 8, maxConnections: 2 });
    assert.equal((await forkd(['network', id])).stdout, 'mode egress\nbandwidth 8 Mbit/s\nmax-connections 2\n');
    const conns = async () => (await forkd(['exec', id, '--', 'python3', '-c', CONNS_PY, A, '2'])).stdout.trim().split('\n');
    assert.deepEqual(await conns(), ['held 2', 'extra False', 'after-close True']);
    await stopDaemonProcess(daemon);
    await exec('nft', ['delete', 'table', 'inet', cfg.env.FORKD_NET_TABLE!]);
    daemon = await startDaemonProcess(cfg.env);
    assert.deepEqual(await conns(), ['held 2', 'extra False', 'after-close True'], 'after the restart');
    const t = (await forkd(['exec', id, '--', 'python3', '-c', TIMED_PY, `http://${A}:8080`, String(3 << 20), 'down'])).stdout.trim();
    assert.ok(Number(t) >= 2.4, `3 MB at 8 Mbit/s after the restart: ${t}`);
  });

  test('tenants network and template network through the CLI (admin key)', async () => {
    const set = await forkd(['tenants', 'network', 'acme', '--egress', 'deny', '--deny-out', `${B}/32`, '--max-connections', '3', '--json']);
    assert.equal(set.code, 0, set.stderr);
    assert.deepEqual(JSON.parse(set.stdout), { tenant: 'acme', policy: { egress: false, denyOut: [`${B}/32`], maxConnections: 3 } });
    const more = await forkd(['tenants', 'network', 'acme', '--egress', 'allow', '--max-bandwidth', '20']);
    assert.equal(more.stdout, `egress allowed\nforced deny-out ${B}/32\nmax bandwidth 20 Mbit/s\nmax connections 3\ndefault none set\n`);
    assert.deepEqual(JSON.parse((await forkd(['tenants', 'network', 'acme', '--reset', '--json'])).stdout).policy, {});
    const tpl = await forkd(['template', 'network', 'base', '--mode', 'egress', '--deny-out', `${A}/32`, '--max-connections', '5']);
    assert.equal(tpl.code, 0, tpl.stderr);
    assert.equal(tpl.stdout, `mode egress\ndeny-out ${A}/32\nmax-connections 5\n`);
    const c = await forkd(['create', '--memory', '128', '--json']);
    assert.equal(c.code, 0, c.stderr);
    const made = JSON.parse(c.stdout) as { id: string };
    assert.deepEqual(JSON.parse((await forkd(['network', made.id, '--json'])).stdout), { mode: 'egress', allowOut: [], denyOut: [`${A}/32`], maxConnections: 5 }, "the template's default");
    assert.equal((await forkd(['template', 'network', 'base', '--clear'])).stdout, 'no default network (creates get none unless the tenant has a default)\n');
    assert.equal((await forkd(['rm', made.id])).code, 0);
    const bad = await forkd(['template', 'network', 'nope']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /NOT_FOUND/);
  });
});

