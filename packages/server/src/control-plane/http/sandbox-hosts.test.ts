import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { connect as netConnect, type AddressInfo } from 'node:net';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testCipher } from '../../testing/test-cipher.js';
import { issueTestCertificate, makeTestCa, type TestCa } from '../../testing/tls-test-ca.js';
import { silentLogger } from '../../shared/logger.js';
import type { RunningServer } from '../../shared/http-server.js';
import { readTlsPair } from '../../shared/tls-files.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { AccessTokens } from '../e2b/access-tokens.js';
import { fakeService } from './app-test-kit.js';
import { apiHandlers } from './server.js';
import { serveSandboxHosts } from './sandbox-hosts.js';

/*
 * The sandbox hosts' HTTPS listener with forkd's real API handlers (port
 * proxy, authentication) over a fake node whose "sandbox port" is a real
 * HTTP server on loopback: routing by name, the SNI/Host check, streaming
 * and upgrades through TLS.
 */

const DOMAIN = 'sbx.test';
const A = 'sbx-aaaaaaaaaaaa';
const B = 'sbx-bbbbbbbbbbbb';
const tokens = new AccessTokens(Buffer.alloc(32, 3));
let dir = '';
let ca: TestCa;
let backend: http.Server;
let hosts: RunningServer;
let store: SqliteControlStore;
/** What the sandbox's server saw of the last request. */
let seen: http.IncomingHttpHeaders = {};
let releaseStream: () => void = () => {};
const envdCalls: (string | undefined)[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forkd-hosts-'));
  ca = await makeTestCa(dir);
  const cert = await issueTestCertificate(ca, dir, 'wild', [`*.${DOMAIN}`]);
  backend = http.createServer((req, res) => {
    seen = req.headers;
    if (req.url === '/events') {
      // One event, then the rest only once the client has read it: a proxy that buffers never gets there.
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      releaseStream = () => res.end('data: two\n\n');
      return;
    }
    res.end(`hello from ${req.headers.host}`);
  });
  backend.on('upgrade', (req, socket) => {
    seen = req.headers;
    socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: echo\r\nconnection: Upgrade\r\n\r\n');
    socket.pipe(socket);
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
  const svc = fakeService();
  svc.connectPort = async () => {
    const s = netConnect((backend.address() as AddressInfo).port, '127.0.0.1');
    return { stream: s, done: new Promise((r) => s.on('close', () => r({ refused: false }))), close: () => s.destroy() };
  };
  store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), cipher: testCipher(), e2bTokens: tokens, close: () => store.close() };
  const api = apiHandlers({ svc, control, logger: silentLogger, proxyDomain: DOMAIN });
  const e2b = { api: (_q: http.IncomingMessage, r: http.ServerResponse) => void r.end('e2b api'), envd: (_q: http.IncomingMessage, r: http.ServerResponse, id?: string) => void (envdCalls.push(id), r.end(`envd of ${id}`)) };
  const source = { certFile: cert.certFile, keyFile: cert.keyFile, variables: 'X' };
  hosts = await serveSandboxHosts({ domain: DOMAIN, api, e2b }, '127.0.0.1', 0, { ...(await readTlsPair(source)), source });
});

after(async () => {
  await hosts?.close();
  backend?.closeAllConnections();
  await new Promise((r) => backend?.close(r));
  await store?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Reply {
  status: number;
  body: string;
  json?: { error?: { code: string; message: string } };
}

/** A request over a TLS connection opened for `sni` ('' for none) that names `host`. */
function request(sni: string, host: string, path = '/', headers: Record<string, string> = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    // Without SNI the client checks the certificate against the address it dialled: trusted by the CA alone here.
    const noName = sni ? {} : { checkServerIdentity: () => undefined };
    const req = https.request({ host: '127.0.0.1', port: hosts.port, path, servername: sni, ca: ca.cert, agent: false, headers: { host, ...headers }, ...noName }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body, ...(/json/.test(res.headers['content-type'] ?? '') ? { json: JSON.parse(body) } : {}) }));
    });
    req.on('error', reject).end();
  });
}

const host = (port: number, id: string) => `${port}-${id}.${DOMAIN}`;
const cred = (id: string) => ({ 'x-access-token': tokens.token(id) });

test('names route: a sandbox port through the port proxy (credentials stripped), 49983 to envd for that sandbox, api.{domain} to E2B\'s API', async () => {
  const r = await request(host(8000, A), host(8000, A), '/', { ...cred(A), 'x-app': 'kept' });
  assert.deepEqual([r.status, r.body], [200, `hello from ${host(8000, A)}`]);
  assert.equal(seen['x-access-token'], undefined, 'the E2B token does not reach the sandbox');
  assert.equal(seen['x-app'], 'kept');
  assert.equal(seen['x-forwarded-host'], host(8000, A));
  assert.deepEqual(await request(host(49983, A), `${host(49983, A)}:443`), { status: 200, body: `envd of ${A}` });
  assert.deepEqual(envdCalls, [A]);
  assert.deepEqual(await request(`api.${DOMAIN}`, `api.${DOMAIN}`), { status: 200, body: 'e2b api' });
  const anon = await request(host(8000, A), host(8000, A));
  assert.equal(anon.status, 401, 'the port proxy\'s own authentication');
  assert.equal(anon.json?.error?.code, 'UNAUTHENTICATED');
  assert.equal((await request(host(8000, A), host(8000, A), '/', cred(B))).status, 401, "another sandbox's token");
});

test('a request whose Host is not the name its TLS connection was opened for is refused (421), as are names not served here', async () => {
  const cases: [string, string, Record<string, string>, RegExp][] = [
    [host(8000, A), host(8000, B), cred(B), /is for 8000-sbx-bbbbbbbbbbbb\.sbx\.test, its TLS connection for 8000-sbx-aaaaaaaaaaaa/],
    [host(8000, A), host(9000, A), cred(A), /its TLS connection for/],
    [host(49983, A), host(49983, B), cred(B), /its TLS connection for/],
    ['', host(8000, A), cred(A), /named no server \(SNI\)/],
    [`api.${DOMAIN}`, host(8000, A), cred(A), /its TLS connection for api\.sbx\.test/],
    [`www.${DOMAIN}`, `www.${DOMAIN}`, {}, /www\.sbx\.test is not served here/],
    [host(8000, A), host(8000, A), { ...cred(A), 'e2b-sandbox-id': B }, /E2b-Sandbox-Id names sbx-bbbbbbbbbbbb, the host sbx-aaaaaaaaaaaa/],
    [host(8000, A), host(8000, A), { ...cred(A), 'e2b-sandbox-port': '49999' }, /E2b-Sandbox-Port says 49999, the host 8000/],
  ];
  for (const [sni, h, headers, re] of cases) {
    const r = await request(sni, h, '/', headers);
    assert.equal(r.status, 421, `${sni} / ${h}`);
    assert.equal(r.json?.error?.code, 'INVALID_ARGUMENT');
    assert.match(r.json?.error?.message ?? '', re);
  }
  assert.deepEqual(envdCalls, [A], 'nothing refused reached envd');
  // Names in another case and E2B's headers that agree are the same sandbox.
  assert.equal((await request(host(8000, A).toUpperCase(), host(8000, A), '/', { ...cred(A), 'e2b-sandbox-id': A, 'e2b-sandbox-port': '8000' })).status, 200);
});

test('server-sent events stream through as they come', { timeout: 10_000 }, async () => {
  const chunks: string[] = [];
  const status = await new Promise<number>((resolve, reject) => {
    const req = https.request({ host: '127.0.0.1', port: hosts.port, path: '/events', servername: host(8000, A), ca: ca.cert, agent: false, headers: { host: host(8000, A), ...cred(A) } }, (res) => {
      res.setEncoding('utf8').on('data', (d: string) => {
        chunks.push(d);
        if (chunks.length === 1) releaseStream();
      });
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject).end();
  });
  assert.equal(status, 200);
  assert.deepEqual(chunks, ['data: one\n\n', 'data: two\n\n']);
});

/** An upgrade over TLS: the reply head, then what comes back for `send`. */
function upgrade(sni: string, h: string, send: string): Promise<{ head: string; echoed: string }> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host: '127.0.0.1', port: hosts.port, servername: sni, ca: ca.cert }, () => {
      s.write(`GET /ws HTTP/1.1\r\nhost: ${h}\r\nconnection: Upgrade\r\nupgrade: echo\r\nx-access-token: ${tokens.token(A)}\r\n\r\n`);
    });
    let got = '';
    s.setEncoding('utf8').on('data', (d: string) => {
      got += d;
      const end = got.indexOf('\r\n\r\n');
      if (end < 0) return;
      if (!got.startsWith('HTTP/1.1 101')) return void s.end();
      if (got.length === end + 4) s.write(send);
      else if (got.length >= end + 4 + send.length) (resolve({ head: got.slice(0, end), echoed: got.slice(end + 4) }), s.end());
    });
    s.on('end', () => resolve({ head: got.slice(0, got.indexOf('\r\n\r\n')), echoed: '' }));
    s.on('error', reject);
  });
}

test('upgrades (WebSockets) through TLS to the sandbox; one naming another host than SNI is refused', async () => {
  const ok = await upgrade(host(8001, A), host(8001, A), 'ping over tls');
  assert.match(ok.head, /^HTTP\/1\.1 101/);
  assert.equal(ok.echoed, 'ping over tls');
  assert.equal(seen['x-access-token'], undefined);
  const refused = await upgrade(host(8001, A), host(8001, B), 'x');
  assert.match(refused.head, /^HTTP\/1\.1 421 Misdirected Request/);
  assert.equal(refused.echoed, '');
});
