import { createServer, type Server, type Socket } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec, spawnStream } from '../shared/exec.js';
import { waitFor } from '../testing/helpers.js';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { assertStillServing } from '../testing/still-serving.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { FETCH_PY, startTestInternet, type TestInternet } from '../testing/test-internet.js';

/*
 * A hostile tenant against the egress paths of a real daemon: the host's own
 * services (on 127.0.0.2 and on the host's address on the test link) and a
 * link-local host (in the test internet's namespace: never the real
 * 169.254.169.254) through the proxy by Host header, by a name resolving
 * there, by TLS name and by address through nft; a tenant's forced-denied
 * name's address through a sandbox's allows; grants tricked by the request
 * path and by a method override, and grants that could never inject.
 * Targets: loopback, and the test's own internet only.
 */
const [A, B] = ['198.51.100.2', '198.51.100.3'];
const LOOP = '127.0.0.2';
const HOST = '203.0.113.1';
const [LL, LL_OPERATOR] = ['169.254.77.1', '169.254.77.2'];
const VALUE = `adv-egress-${process.pid}`;

/** From inside: argv[3] argv[4] (method, target) to argv[1]:argv[2] naming argv[5] (SNI too with argv[6] = 'tls'), more header lines after; the body or ERR and why. */
const RAW_PY = `import sys,socket,ssl
try:
  s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=3)
  if len(sys.argv)>6 and sys.argv[6]=='tls':
    c=ssl.create_default_context();c.check_hostname=False;c.verify_mode=ssl.CERT_NONE;s=c.wrap_socket(s,server_hostname=sys.argv[5])
  extra=''.join(h+'\\r\\n' for h in sys.argv[7:])
  s.sendall(('%s %s HTTP/1.1\\r\\nHost: %s\\r\\n%sConnection: close\\r\\n\\r\\n'%(sys.argv[3],sys.argv[4],sys.argv[5],extra)).encode());d=b''
  while True:
    c=s.recv(65536)
    if not c: break
    d+=c
  h,_,b=d.partition(b'\\r\\n\\r\\n');print(b.decode() if h.startswith(b'HTTP/1.1 200') else 'ERR '+h.split(b'\\r\\n')[0].decode())
except Exception as e: print('ERR',type(e).__name__)`;

/** A TCP service on the host that answers any connection with a page, and counts them. */
async function hostService(addr: string, port: number, hits: { n: number }): Promise<Server> {
  const srv = createServer((s: Socket) => {
    hits.n++;
    s.on('error', () => {});
    s.end('HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\nhost service');
  });
  await new Promise<void>((res, rej) => {
    srv.once('error', rej);
    srv.listen(port, addr, () => res());
  });
  return srv;
}

const LINK_LOCAL_SERVER = `const http=require('node:http');for(const a of process.argv.slice(1))for(const p of [80,8080])http.createServer((q,s)=>s.end('link-local '+a)).listen(p,a);`;

describe('adversarial egress: the host, link-local, forced denials and grants', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let internet: TestInternet;
  let t: ApiTarget;
  let neighbour = '';
  let uplink = '';
  let linkLocal: ReturnType<typeof spawnStream> | undefined;
  const hits = { n: 0 };
  const servers: Server[] = [];

  const py = async (id: string, code: string, ...args: string[]) => (await execHttp(t, id, ['python3', '-c', code, ...args])).stdout.trim();
  const raw = (id: string, to: string, port: number, method: string, target: string, host: string, ...more: string[]) => py(id, RAW_PY, to, String(port), method, target, host, port === 443 ? 'tls' : 'plain', ...more);
  const create = async (network: object): Promise<string> => {
    const r = await api(t, 'POST', '/v1/sandboxes', { memoryMb: 128, network });
    assert.equal(r.status, 201, r.text);
    return r.json.id as string;
  };

  before(async () => {
    internet = await startTestInternet({ zone: { 'loop.test': LOOP, 'host.test': HOST, 'll.test': LL } });
    uplink = /\bdev (\S+)/.exec((await exec('ip', ['-o', 'route', 'get', A])).stdout)?.[1] ?? '';
    assert.match(uplink, /^fti/);
    // A link-local host of the test's own, in its internet's namespace (the route goes with the test's link).
    await exec('nsenter', [`--net=${internet.netns}`, 'ip', '-batch', '-'], { input: `addr add ${LL}/32 dev up0\naddr add ${LL_OPERATOR}/32 dev up0\n` });
    await exec('ip', ['route', 'add', '169.254.77.0/30', 'dev', uplink]);
    linkLocal = spawnStream('nsenter', [`--net=${internet.netns}`, process.execPath, '-e', LINK_LOCAL_SERVER, LL, LL_OPERATOR]);
    linkLocal.stream.on('error', () => {});
    await waitFor(async () => (await exec('nsenter', [`--net=${internet.netns}`, 'ss', '-Htln'], { allowFailure: true })).stdout.includes(`${LL_OPERATOR}:8080`), 10_000, 'the link-local servers');
    for (const [a, p] of [[LOOP, 80], [LOOP, 443], [HOST, 80], [HOST, 443]] as const) servers.push(await hostService(a, p, hits));
    dir = await mkdtemp(join(tmpdir(), 'forkd-adv-egress-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_DNS_UPSTREAM: internet.dns, FORKD_EGRESS_OPERATOR_ALLOW: `${LL_OPERATOR}/32` });
    t = { url: daemon.url, apiKey: daemon.apiKey };
    neighbour = await create({ mode: 'none' });
  });

  after(async () => {
    await stopDaemonProcess(daemon);
    for (const s of servers) s.close();
    linkLocal?.kill();
    if (uplink) await exec('ip', ['route', 'del', '169.254.77.0/30', 'dev', uplink], { allowFailure: true });
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    await internet?.close();
  });

  test("everything allowed, the proxy still never reaches the host's loopback or its own address: by Host header, by a name resolving there, by TLS name, by an octal literal", async () => {
    const id = await create({ mode: 'egress', allowOut: ['0.0.0.0/0', 'loop.test', 'host.test'] });
    assert.equal(await raw(id, B, 80, 'GET', '/', A), `hello from ${A}`, 'the proxy works');
    const reached: string[] = [];
    for (const name of [LOOP, 'loop.test', '0177.0.0.2', HOST, 'host.test']) {
      for (const port of [80, 443]) {
        const before = hits.n;
        const got = await raw(id, A, port, 'GET', '/', name);
        if (!got.startsWith('ERR') || hits.n !== before) reached.push(`${name}:${port} ${got}`);
      }
    }
    assert.deepEqual(reached, [], 'every attempt refused, no connection to a host service');
    assert.equal(hits.n, 0);
    await assertStillServing(t, neighbour, daemon!.child);
  });

  test('link-local is refused by the proxy and by nft whatever the rules allow, but for what the operator allowed', async () => {
    const id = await create({ mode: 'egress', allowOut: ['0.0.0.0/0', '169.254.0.0/16', 'll.test'] });
    const got = { host: await raw(id, A, 80, 'GET', '/', LL), name: await raw(id, A, 80, 'GET', '/', 'll.test'), nft: await py(id, FETCH_PY, `http://${LL}:8080/`) };
    assert.deepEqual(Object.entries(got).filter(([, v]) => !v.startsWith('ERR')), [], 'by Host header, by a name resolving there, by address (nft)');
    // FORKD_EGRESS_OPERATOR_ALLOW names this one: reachable (the sandbox's own rules allow it too).
    assert.equal(await raw(id, A, 80, 'GET', '/', LL_OPERATOR), `link-local ${LL_OPERATOR}`);
    assert.equal(await py(id, FETCH_PY, `http://${LL_OPERATOR}:8080/`), `link-local ${LL_OPERATOR}`);
    await assertStillServing(t, neighbour, daemon!.child);
  });

  test("a tenant's forced-denied name: its address stays denied whatever the sandbox allows, by name or by address", async () => {
    assert.equal((await api(t, 'PUT', '/v1/tenants/default/network', { denyOut: ['b.test'] })).status, 200);
    try {
      // x.sub.test resolves to b.test's address: an allowed name's learned address must not open it.
      const id = await create({ mode: 'egress', allowOut: ['0.0.0.0/0', '*.sub.test'] });
      const got = {
        name: await py(id, FETCH_PY, 'http://b.test/'),
        'an allowed name at its address (nft)': await py(id, FETCH_PY, `http://x.sub.test:${internet.port}/`),
        'its address (nft)': await py(id, FETCH_PY, `http://${B}:${internet.port}/`),
        'its address as Host (proxy)': await raw(id, A, 80, 'GET', '/', B),
      };
      assert.deepEqual(Object.entries(got).filter(([, v]) => !v.startsWith('ERR')), []);
      assert.equal(await py(id, FETCH_PY, `http://${A}:${internet.port}/`), `hello from ${A}`, 'the rest is allowed');
    } finally {
      await api(t, 'PUT', '/v1/tenants/default/network', {});
    }
    await assertStillServing(t, neighbour, daemon!.child);
  });

  test('a path-limited grant: no secret for a path that leaves the prefix or that servers read differently', async () => {
    assert.equal((await api(t, 'PUT', '/v1/secrets/TOKEN', { value: VALUE })).status, 200);
    const id = await create({ mode: 'egress', allowOut: ['a.test'] });
    const g = await api(t, 'POST', `/v1/sandboxes/${id}/grants`, { secret: 'TOKEN', hosts: ['a.test'], paths: ['/allowed'], header: 'X-Credential: {secret}' });
    assert.equal(g.status, 201, g.text);
    const withSecret = `hello from ${A} with ${VALUE}`;
    assert.equal(await raw(id, A, 80, 'GET', '/allowed/x', 'a.test'), withSecret, 'the grant works');
    const leaked: string[] = [];
    for (const path of ['/allowed/../private', '/allowed/%2e%2e/private', '/allowed/%2E%2E/private', '/allowed/..%2fprivate', '/allowed%2f..%2fprivate', '/allowed\\..\\private', '/allowed/..;/private', '/allowed;/../private', '/allowed//../private']) {
      const got = await raw(id, A, 80, 'GET', path, 'a.test');
      if (got !== `hello from ${A}`) leaked.push(`${path}: ${got}`);
    }
    assert.deepEqual(leaked, []);
    assert.equal(await raw(id, A, 80, 'GET', '/%61llowed/x', 'a.test'), withSecret, 'matched decoded');
    await assertStillServing(t, neighbour, daemon!.child);
  });

  test('a method-limited grant: no secret when the request claims another method', async () => {
    const id = await create({ mode: 'egress', allowOut: ['a.test'] });
    const g = await api(t, 'POST', `/v1/sandboxes/${id}/grants`, { secret: 'TOKEN', hosts: ['a.test'], methods: ['GET'], header: 'X-Credential: {secret}' });
    assert.equal(g.status, 201, g.text);
    assert.equal(await raw(id, A, 80, 'GET', '/x', 'a.test'), `hello from ${A} with ${VALUE}`, 'the grant works');
    const leaked: string[] = [];
    for (const [target, h] of [['/x', 'X-HTTP-Method-Override: DELETE'], ['/x', 'X-HTTP-Method: DELETE'], ['/x', 'X-Method-Override: DELETE'], ['/x?_method=DELETE', 'X-Other: 1']] as const) {
      const got = await raw(id, A, 80, 'GET', target, 'a.test', h);
      if (got !== `hello from ${A}`) leaked.push(`${target} ${h}: ${got}`);
    }
    assert.deepEqual(leaked, []);
    await assertStillServing(t, neighbour, daemon!.child);
  });

  test('a grant that could never inject (a port the proxy does not take) is refused, standing or per call', async () => {
    const id = await create({ mode: 'egress', allowOut: ['a.test'] });
    const g = await api(t, 'POST', `/v1/sandboxes/${id}/grants`, { secret: 'TOKEN', hosts: ['a.test:8000'], header: 'X-Credential: {secret}' });
    assert.equal(g.status, 400, g.text);
    assert.equal(g.json.error.code, 'INVALID_ARGUMENT');
    assert.match(g.json.error.message, /ports 80 and 443 only/);
    const e = await api(t, 'POST', `/v1/sandboxes/${id}/exec`, { cmd: ['true'], grants: [{ secret: 'TOKEN', hosts: ['a.test:8000'], header: 'X-Credential: {secret}' }] });
    assert.equal(e.status, 400, e.text);
    assert.equal(e.json.error.code, 'INVALID_ARGUMENT');
    assert.equal((await api(t, 'POST', `/v1/sandboxes/${id}/grants`, { secret: 'TOKEN', hosts: ['a.test:443'], header: 'X-Credential: {secret}' })).status, 201);
    await assertStillServing(t, neighbour, daemon!.child);
  });
});
