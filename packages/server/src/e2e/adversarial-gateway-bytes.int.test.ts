import { mkdtemp, readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { randomBytes } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import { api, execHttp, type ApiTarget } from '../testing/http-client.js';
import { stopDaemonProcess } from '../testing/daemon-process.js';
import { startE2bDaemon, type E2bDaemon } from '../testing/e2b-daemon.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { waitFor } from '../testing/helpers.js';
import { assertStillServing } from '../testing/still-serving.js';
import { envelope } from '../control-plane/e2b/connect-framing.js';
import { MAX_PORT_CONNECTIONS_PER_SANDBOX } from '../node/manager/sandbox-manager.js';
import { mutate, rawRequest, wsGarbage, type Target } from '../testing/gateway-fuzz.js';

/**
 * A hostile client of the envd gateway, the WebSocket endpoints and the port
 * proxy (and a hostile server behind the port proxy): random, truncated and
 * mutated bytes for a bounded time, then the reviewed items one by one
 * (stdin nobody reads, more port connections than the cap, a watcher
 * flood). Throughout, the daemon answers and a neighbour's exec works, and
 * no fault ever reached the process's last resort (`uncaught` stays 0).
 */

/** Answers every connection with random bytes, some of them after an HTTP-like start. */
const RANDOM_SERVER = `
import socket,threading,os,random
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(('127.0.0.1',8003)); s.listen(64)
P=[b'',b'HTTP/1.1 200 OK\\r\\n',b'HTTP/1.1 101 Switching Protocols\\r\\n\\r\\n',b'HTTP/1.1 200 OK\\r\\nContent-Length: 99999\\r\\n\\r\\n',b'HTTP/1.1 200 OK\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\nzz\\r\\n',b'HTTP/1.1 42 X\\r\\n\\r\\n']
def serve(c):
  try:
    c.settimeout(2); c.recv(65536)
    c.sendall(random.choice(P)+os.urandom(random.randint(0,4096)))
  except Exception: pass
  c.close()
while True:
  c,_=s.accept(); threading.Thread(target=serve,args=(c,),daemon=True).start()
`;
/** Accepts connections and holds them open (the port-proxy cap case). */
const HOLD_SERVER = `
import socket,threading,time
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET,socket.SO_REUSEADDR,1); s.bind(('127.0.0.1',8004)); s.listen(256)
held=[]
while True:
  c,_=s.accept(); held.append(c)
`;

async function rssMb(pid: number): Promise<number> {
  const kb = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8'))?.[1];
  assert.ok(kb, 'VmRSS of the daemon');
  return Number(kb) / 1024;
}

describe('adversarial gateway bytes (real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let e2b: E2bDaemon;
  let admin: ApiTarget;
  let tenant: ApiTarget;
  let attacker = '';
  let envdToken = '';
  let neighbour = '';

  const envdHeaders = (extra: Record<string, string> = {}) => ({ 'e2b-sandbox-id': attacker, 'x-access-token': envdToken, ...extra });
  const uncaught = async () => Number(/forkd_handler_faults_total\{component="uncaught"\} (\d+)/.exec((await api(admin, 'GET', '/metrics')).text)?.[1] ?? 0);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-gateway-'));
    cfg = testConfig(dir);
    e2b = await startE2bDaemon(cfg.env);
    admin = e2b.daemon;
    tenant = { url: e2b.daemon.url, apiKey: e2b.key };
    const r = await fetch(`${e2b.apiUrl}/sandboxes`, { method: 'POST', headers: { 'x-api-key': e2b.key, 'content-type': 'application/json' }, body: JSON.stringify({ templateID: 'base', timeout: 3600 }) });
    assert.equal(r.status, 201, await r.clone().text());
    ({ sandboxID: attacker, envdAccessToken: envdToken } = (await r.json()) as { sandboxID: string; envdAccessToken: string });
    neighbour = (await api(admin, 'POST', '/v1/sandboxes', {})).json.id;
    for (const [tag, src] of [['random', RANDOM_SERVER], ['hold', HOLD_SERVER]] as const) {
      assert.equal((await api(tenant, 'POST', `/v1/sandboxes/${attacker}/exec`, { cmd: ['python3', '-c', src], background: true, tag })).status, 201);
    }
    await api(tenant, 'POST', `/v1/sandboxes/${attacker}/exec`, { command: 'mkdir -p /srv && echo hi > /srv/hi.txt && cd /srv && exec python3 -m http.server 8000 --bind 127.0.0.1', background: true, tag: 'web' });
    await waitFor(async () => (await proxied('/hi.txt')).status === 200, 15_000, 'web server up');
  });
  after(async () => {
    await stopDaemonProcess(e2b?.daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  function proxied(path: string, port = 8000): Promise<Response> {
    return fetch(`${admin.url}/sandboxes/${attacker}/ports/${port}${path}`, { headers: { 'x-api-key': e2b.key } });
  }

  test('live fuzz: random, truncated and mutated bytes at the envd gateway, the stream sockets and the port proxy', async (t) => {
    const envd = new URL(e2b.envdUrl);
    const api0 = new URL(admin.url);
    const envdT: Target = { host: envd.hostname, port: Number(envd.port) };
    const apiT: Target = { host: api0.hostname, port: Number(api0.port) };
    const start = envelope(0, { process: { cmd: 'echo', args: ['x'] } });
    const form = Buffer.from(`--b\r\ncontent-disposition: form-data; name="file"; filename="f"\r\n\r\nhello\r\n--b--\r\n`);
    const wsUrl = `${admin.url.replace(/^http/, 'ws')}/v1/sandboxes/${attacker}/stream?api_key=${e2b.key}`;
    const until = Date.now() + 25_000;
    let requests = 0;
    const worker = async (one: () => Promise<unknown>) => {
      while (Date.now() < until) {
        await one().catch(() => {});
        requests++;
      }
    };
    const post = (path: string, ct: string, body: Buffer) =>
      fetch(`${e2b.envdUrl}${path}`, { method: 'POST', headers: envdHeaders({ 'content-type': ct }), body, signal: AbortSignal.timeout(5000) }).then((r) => r.arrayBuffer());
    const health = (async () => {
      while (Date.now() < until) {
        assert.equal((await api(admin, 'GET', '/v1/health')).status, 200, 'health during the fuzz');
        await sleep(1000);
      }
    })();
    await Promise.all([
      health,
      // envd: Connect streams, unary JSON, client streaming, uploads, and heads that are not HTTP.
      worker(() => post('/process.Process/Start', 'application/connect+json', mutate(start))),
      worker(() => post('/filesystem.Filesystem/Stat', 'application/json', mutate(Buffer.from('{"path":"/tmp"}')))),
      worker(() => post('/process.Process/StreamInput', 'application/connect+json', Buffer.concat([mutate(envelope(0, { start: { process: { pid: 1 } } })), randomBytes(64)]))),
      worker(() => fetch(`${e2b.envdUrl}/files?path=/tmp/fz`, { method: 'POST', headers: envdHeaders({ 'content-type': 'multipart/form-data; boundary=b' }), body: mutate(form), signal: AbortSignal.timeout(5000) }).then((r) => r.arrayBuffer())),
      worker(() => fetch(`${e2b.envdUrl}/files?path=/tmp/fz`, { method: 'POST', headers: envdHeaders({ 'content-type': 'multipart/form-data; boundary=b', 'content-encoding': 'gzip' }), body: mutate(gzipSync(form)), signal: AbortSignal.timeout(5000) }).then((r) => r.arrayBuffer())),
      worker(() => rawRequest(envdT, mutate(Buffer.from(`POST /process.Process/Start HTTP/1.1\r\nhost: x\r\ne2b-sandbox-id: ${attacker}\r\ncontent-length: 12\r\n\r\n`)))),
      // WebSocket endpoints: bad frames after a good handshake, bad JSON, huge messages.
      worker(() => wsGarbage(apiT, `/v1/sandboxes/${attacker}/stream?api_key=${e2b.key}`)),
      worker(async () => {
        const ws = new WebSocket(wsUrl);
        ws.on('error', () => {});
        await new Promise((r) => ws.once('open', r).once('close', r));
        const pick = Math.random();
        if (pick < 0.3) ws.send(mutate(Buffer.from('{"op":"spawn","spawn":{"cmd":["cat"]}}')).toString());
        else if (pick < 0.6) ws.send(randomBytes(Math.floor(Math.random() * 4096)), { binary: Math.random() < 0.5 });
        else if (pick < 0.7) ws.send(Buffer.alloc(2 * 1024 * 1024, 0x41));
        else {
          ws.send('{"op":"spawn","spawn":{"cmd":["cat"]}}');
          for (let i = 0; i < 5; i++) ws.send(mutate(Buffer.from('{"type":"resize","cols":80,"rows":24}')).toString());
        }
        await sleep(100);
        ws.terminate();
      }),
      // Port proxy: bad heads, and a server that answers random bytes (by HTTP and by upgrade).
      worker(() => rawRequest(apiT, mutate(Buffer.from(`GET /sandboxes/${attacker}/ports/8000/hi.txt HTTP/1.1\r\nhost: x\r\nx-api-key: ${e2b.key}\r\n\r\n`)))),
      worker(() => proxied('/any', 8003).then((r) => r.arrayBuffer())),
      worker(() => rawRequest(apiT, Buffer.from(`GET /sandboxes/${attacker}/ports/8003/ HTTP/1.1\r\nhost: x\r\nx-api-key: ${e2b.key}\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n${randomBytes(64).toString('latin1')}`))),
    ]);
    t.diagnostic(`${requests} hostile requests in 25 s`);
    assert.ok(requests > 200, `only ${requests} requests in the fuzz`);
    await assertStillServing(admin, neighbour, e2b.daemon.child);
    assert.equal((await proxied('/hi.txt')).status, 200, 'the port proxy still serves');
    // Request targets no URL parser takes, as an upgrade to the API and as a request to envd.
    const targets = ['//x:99999/', 'http://[/'];
    for (const target of targets) await rawRequest(apiT, Buffer.from(`GET ${target} HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\n\r\n`));
    assert.equal(await uncaught(), 0, 'an upgrade to a target no URL parser takes reached the last resort');
    for (const target of targets) {
      const envdAnswer = (await rawRequest(envdT, Buffer.from(`GET ${target} HTTP/1.1\r\nhost: x\r\n\r\n`))).toString('latin1');
      assert.match(envdAnswer, /^HTTP\/1\.1 400 /, `envd on ${target}`);
    }
    const badGzip = await fetch(`${e2b.envdUrl}/files?path=/tmp/gz`, { method: 'POST', headers: envdHeaders({ 'content-type': 'application/octet-stream', 'content-encoding': 'gzip' }), body: randomBytes(4096) });
    assert.equal(badGzip.status, 400, `a body that is not gzip: ${await badGzip.text()}`);
    assert.equal(await uncaught(), 0, `a fault reached the last resort:\n${e2b.daemon.log().split('\n').filter((l) => /uncaught/.test(l)).slice(0, 5).join('\n')}`);
  });

  test('stdin to a process that never reads it: the daemon holds a bounded amount, not what the client sends', async (t) => {
    const ws = new WebSocket(`${admin.url.replace(/^http/, 'ws')}/v1/sandboxes/${attacker}/stream?api_key=${e2b.key}`);
    ws.on('error', () => {});
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ op: 'spawn', spawn: { cmd: ['sleep', '600'] } }));
    await new Promise<void>((r) => ws.on('message', (d, binary) => !binary && /"started"/.test(d.toString()) && r()));
    const before = await rssMb(e2b.daemon.child.pid!);
    const chunk = randomBytes(1024 * 1024);
    let accepted = 0;
    let peak = before;
    const until = Date.now() + 12_000;
    // Sends as fast as the daemon takes them (the client's own buffer kept small), up to 512 MiB.
    while (Date.now() < until && accepted < 512 * 1024 * 1024) {
      if (ws.bufferedAmount > 8 * 1024 * 1024) {
        await sleep(50);
        peak = Math.max(peak, await rssMb(e2b.daemon.child.pid!));
        continue;
      }
      ws.send(chunk, { binary: true });
      accepted += chunk.length;
    }
    peak = Math.max(peak, await rssMb(e2b.daemon.child.pid!));
    const inFlight = accepted - ws.bufferedAmount;
    ws.terminate();
    t.diagnostic(`stdin taken by the daemon: ${Math.round(inFlight / 2 ** 20)} MiB; RSS ${Math.round(before)} -> peak ${Math.round(peak)} MiB`);
    assert.ok(peak - before < 96, `daemon RSS grew ${Math.round(peak - before)} MiB (from ${Math.round(before)}) with ${Math.round(inFlight / 2 ** 20)} MiB of stdin handed to it`);
    assert.ok(inFlight < 128 * 1024 * 1024, `the daemon took ${Math.round(inFlight / 2 ** 20)} MiB of stdin nobody reads`);
    await assertStillServing(admin, neighbour, e2b.daemon.child);
  });

  test(`more port-proxy connections than the cap (${MAX_PORT_CONNECTIONS_PER_SANDBOX} per sandbox) are refused cleanly; others work`, async () => {
    const held: Socket[] = [];
    const open = async (): Promise<string> => {
      const s = connect(Number(new URL(admin.url).port), '127.0.0.1');
      s.on('error', () => {});
      held.push(s);
      s.write(`GET /sandboxes/${attacker}/ports/8004/ HTTP/1.1\r\nhost: x\r\nx-api-key: ${e2b.key}\r\nconnection: Upgrade\r\nupgrade: raw\r\n\r\nhello`);
      // The hold server answers nothing: an open connection shows as silence, a refusal as an HTTP answer.
      return new Promise((r) => {
        s.once('data', (d) => r(d.toString('latin1').split('\r\n')[0] ?? ''));
        setTimeout(() => r('open'), 1500);
      });
    };
    try {
      const first = await Promise.all(Array.from({ length: MAX_PORT_CONNECTIONS_PER_SANDBOX }, open));
      assert.deepEqual(new Set(first), new Set(['open']), 'every connection up to the cap is made');
      const over = await open();
      assert.match(over, /^HTTP\/1\.1 429 /, 'one past the cap is refused with RESOURCE_EXHAUSTED');
      const overHttp = await proxied('/hi.txt');
      assert.equal(overHttp.status, 429);
      assert.equal(((await overHttp.json()) as { error: { code: string } }).error.code, 'RESOURCE_EXHAUSTED');
      await assertStillServing(admin, neighbour, e2b.daemon.child);
    } finally {
      for (const s of held) s.destroy();
    }
    await waitFor(async () => (await proxied('/hi.txt')).status === 200, 10_000, 'the sandbox is served again once its connections closed');
  });

  test('a watcher flood: unread events per watcher are bounded', async () => {
    const call = (method: string, body: unknown) =>
      fetch(`${e2b.envdUrl}/filesystem.Filesystem/${method}`, { method: 'POST', headers: envdHeaders({ 'content-type': 'application/json' }), body: JSON.stringify(body) }).then(async (r) => ({ status: r.status, json: (await r.json()) as any }));
    await execHttp(tenant, attacker, ['mkdir', '-p', '/tmp/flood']);
    const w = await call('CreateWatcher', { path: '/tmp/flood' });
    assert.equal(w.status, 200, JSON.stringify(w.json));
    await execHttp(tenant, attacker, ['bash', '-c', 'cd /tmp/flood && seq 1 5000 | xargs touch']);
    await sleep(3000);
    const got = await call('GetWatcherEvents', { watcherId: w.json.watcherId });
    assert.equal(got.status, 200);
    assert.ok(got.json.events.length > 0 && got.json.events.length <= 1000, `${got.json.events.length} unread events kept`);
    assert.equal((await call('RemoveWatcher', { watcherId: w.json.watcherId })).status, 200);
    await assertStillServing(admin, neighbour, e2b.daemon.child);
  });
});
