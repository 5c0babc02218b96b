import { randomInt } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { api, execHttp } from '../testing/http-client.js';
import { stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { startE2bDaemon } from '../testing/e2b-daemon.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { issueTestCertificate, makeTestCa, type TestCa } from '../testing/tls-test-ca.js';
import { waitFor } from '../testing/helpers.js';
import { SSE_EVENTS, WS_ECHO } from '../testing/sandbox-servers.js';
import { runSdkChild } from '../testing/sdk-child.js';

/*
 * `forkd serve` with FORKD_PROXY_TLS_CERT_FILE: `{port}-{id}.{domain}` over
 * HTTPS on port 443 of a loopback address of the test's own, with a wildcard
 * certificate of a CA the test makes. Clients reach it by name: this process
 * dials the address with the name as SNI and Host; E2B's SDK runs in a child
 * process that trusts the CA (NODE_EXTRA_CA_CERTS) and resolves the domain
 * to that address (testing/loopback-resolver.ts). Nothing leaves the host.
 */

const DOMAIN = 'hosts.forkd.test';

interface Reply {
  status: number;
  body: string;
}

describe('sandbox hosts over HTTPS (real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let ca: TestCa;
  let key = '';
  const address = `127.${randomInt(2, 250)}.${randomInt(2, 250)}.${randomInt(2, 250)}`;
  const sbx: { id: string; token: string }[] = [];
  const name = (port: number, i: number) => `${port}-${sbx[i]!.id}.${DOMAIN}`;

  /** A request on a connection opened for `sni` that names `host` (by default the same). */
  function get(sni: string, path: string, headers: Record<string, string> = {}, host = sni): Promise<Reply> {
    return new Promise((resolve, reject) => {
      https
        .get({ host: address, port: 443, servername: sni, path, ca: ca.cert, agent: false, headers: { host, ...headers } }, (res) => {
          let body = '';
          res.setEncoding('utf8').on('data', (d: string) => (body += d));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        })
        .on('error', reject);
    });
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-hosts-'));
    cfg = testConfig(dir);
    ca = await makeTestCa(dir);
    const cert = await issueTestCertificate(ca, dir, 'wildcard', [`*.${DOMAIN}`]);
    const e = await startE2bDaemon({ ...cfg.env, FORKD_HOST: address, FORKD_PROXY_DOMAIN: DOMAIN, FORKD_PROXY_TLS_CERT_FILE: cert.certFile, FORKD_PROXY_TLS_KEY_FILE: cert.keyFile, FORKD_PROXY_HTTPS_PORT: '443' });
    const d = (daemon = e.daemon);
    key = e.key;
    await waitFor(() => /"msg":"sandbox hosts serving","url":"https:\/\/127\.[\d.]+:443"/.test(d.log()), 10_000, 'the sandbox hosts listener');
    for (let i = 0; i < 2; i++) {
      const s = (await api(d, 'POST', '/v1/sandboxes', {})).json as { id: string; proxyToken: string };
      sbx.push({ id: s.id, token: s.proxyToken });
      await execHttp(d, s.id, ['bash', '-c', `mkdir -p /srv && echo sandbox-${i} > /srv/who.txt`]);
      assert.equal((await api(d, 'POST', `/v1/sandboxes/${s.id}/exec`, { command: 'exec python3 -m http.server 8000 --bind 127.0.0.1 --directory /srv', background: true, tag: 'web' })).status, 201);
    }
    assert.equal((await api(d, 'POST', `/v1/sandboxes/${sbx[0]!.id}/exec`, { cmd: ['python3', '-c', WS_ECHO], background: true, tag: 'ws' })).status, 201);
    assert.equal((await api(d, 'POST', `/v1/sandboxes/${sbx[0]!.id}/exec`, { cmd: ['python3', '-c', SSE_EVENTS], background: true, tag: 'sse' })).status, 201);
    for (let i = 0; i < 2; i++) await waitFor(async () => (await get(name(8000, i), '/who.txt', { 'x-forkd-token': sbx[i]!.token })).status === 200, 10_000, `web server ${i}`);
  });

  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test("forkd's sandboxes by name over HTTPS: the proxy token, an API key, nothing without one", async () => {
    assert.deepEqual(await get(name(8000, 0), '/who.txt', { 'x-forkd-token': sbx[0]!.token }), { status: 200, body: 'sandbox-0\n' });
    assert.deepEqual(await get(name(8000, 1), `/who.txt?forkd_token=${sbx[1]!.token}`), { status: 200, body: 'sandbox-1\n' });
    assert.equal((await get(name(8000, 0), '/who.txt', { authorization: `Bearer ${daemon!.apiKey}` })).body, 'sandbox-0\n');
    assert.equal((await get(name(8000, 0), '/who.txt')).status, 401);
    assert.equal((await get(name(8000, 0), '/who.txt', { 'x-forkd-token': sbx[1]!.token })).status, 401, "another sandbox's token");
  });

  test("a request whose Host names another sandbox than its connection's SNI is refused, with that sandbox's own token", async () => {
    const crossed = await get(name(8000, 0), '/who.txt', { 'x-forkd-token': sbx[1]!.token }, name(8000, 1));
    assert.equal(crossed.status, 421);
    assert.match(JSON.parse(crossed.body).error.message, /its TLS connection for 8000-sbx-/);
    assert.equal((await get(name(8000, 0), '/who.txt', { 'x-forkd-token': sbx[0]!.token }, name(8001, 0))).status, 421, 'another port of the same sandbox');
    assert.equal((await get(name(8000, 1), '/who.txt', { 'x-forkd-token': sbx[1]!.token })).body, 'sandbox-1\n', 'on its own connection it is served');
  });

  test('WebSockets and server-sent events pass through TLS as they come', async () => {
    // The name resolved by this client alone (net asks for all addresses).
    const lookup = (_h: string, o: { all?: boolean }, cb: (e: null, a: string | { address: string; family: number }[], f?: number) => void) => (o.all ? cb(null, [{ address, family: 4 }]) : cb(null, address, 4));
    const ws = new WebSocket(`wss://${name(8001, 0)}/`, { ca: ca.cert, lookup: lookup as never, headers: { 'x-forkd-token': sbx[0]!.token } });
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.on('open', () => ws.send('ping over https'));
      ws.on('message', (d) => resolve(String(d)));
      ws.on('error', reject);
    });
    ws.close();
    assert.equal(echoed, 'ping over https');
    const arrivals: { at: number; data: string }[] = [];
    const t0 = Date.now();
    await new Promise<void>((resolve, reject) => {
      https
        .get({ host: address, port: 443, servername: name(8002, 0), path: '/', ca: ca.cert, agent: false, headers: { host: name(8002, 0), 'x-forkd-token': sbx[0]!.token } }, (res) => {
          assert.equal(res.headers['content-type'], 'text/event-stream');
          res.setEncoding('utf8').on('data', (d: string) => arrivals.push({ at: Date.now() - t0, data: d }));
          res.on('end', resolve);
        })
        .on('error', reject);
    });
    assert.equal(arrivals.map((a) => a.data).join(''), 'data: 0\n\ndata: 1\n\ndata: 2\n\n');
    assert.ok(arrivals.length >= 3, `three events, three arrivals: ${JSON.stringify(arrivals)}`);
    assert.ok(arrivals.at(-1)!.at - arrivals[0]!.at >= 800, `the first event came before the last was sent: ${JSON.stringify(arrivals)}`);
  });

  for (const sdk of ['e2b', 'e2b-2-35']) {
    test(`E2B's SDK (${sdk}) with only E2B_DOMAIN and E2B_API_KEY: create, commands, files through 49983-{id}.{domain}, getHost() over https`, async () => {
      const out = await runSdk(sdk);
      const id = out.sandboxId as string;
      assert.equal(out.sandboxDomain, DOMAIN, 'the API told the SDK its domain');
      assert.equal(out.envdUrl, `https://49983-${id}.${DOMAIN}`);
      assert.deepEqual(out.run, { stdout: 'over-https\nuser\n', exitCode: 0 });
      assert.equal((out.streamed as string[]).join(''), '1\n2\n3\n');
      assert.ok((out.streamed as string[]).length >= 2, 'output streamed as it came');
      assert.equal(out.read, 'written through 49983');
      assert.equal(out.downloaded, 'written through 49983', 'a presigned URL (no headers) routed by its host name');
      assert.equal(out.host, `8000-${id}.${DOMAIN}`);
      assert.equal(out.served, 'written through 49983', "the sandbox's server through getHost() with its traffic token");
      assert.equal(out.anonymousStatus, 401);
      assert.deepEqual([out.isRunning, out.killed], [true, true]);
    });
  }

  /** testing/e2b-https-main.ts as an E2B user would run it, plus the test's CA and resolver. */
  function runSdk(sdk: string): Promise<Record<string, unknown>> {
    return runSdkChild({ domain: DOMAIN, address, caFile: ca.certFile, key, log: () => daemon!.log() }, 'e2b-https-main.js', [sdk]);
  }
});
