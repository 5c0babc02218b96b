import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, execHttp } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { NetnsHolder } from '../node/network/netns-holder.js';
import { waitFor } from '../testing/helpers.js';
import { WS_ECHO } from '../testing/sandbox-servers.js';

/** In the sandbox: 8005 reads a request and never answers; 8006 answers half of what it announced and closes. */
const HOSTILE = `
import socket, threading, time
def silent(c):
    c.recv(65536); time.sleep(3600)
def half(c):
    c.recv(65536); c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Length: 1000\\r\\n\\r\\n0123456789'); c.close()
for port, fn in ((8005, silent), (8006, half)):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', port)); s.listen(256)
    def loop(s=s, fn=fn):
        while True:
            c, _ = s.accept(); threading.Thread(target=fn, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
print('ready', flush=True)
time.sleep(1e9)
`;

/** A GET with any Host header (fetch refuses to set one). */
function get(url: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    http
      .get({ host: u.hostname, port: u.port, path, headers }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('port proxy (real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let id = '';
  let token = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-proxy-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_PROXY_DOMAIN: 'sbx.test' });
    const s = (await api(daemon, 'POST', '/v1/sandboxes', {})).json;
    id = s.id;
    token = s.proxyToken;
    assert.match(token, /^[A-Za-z0-9_-]{32}$/);
    await execHttp(daemon, id, ['bash', '-c', 'mkdir -p /srv && echo hello-from-sandbox > /srv/hello.txt && head -c 1048576 /dev/urandom | base64 -w0 > /srv/big.txt']);
    assert.equal((await api(daemon, 'POST', `/v1/sandboxes/${id}/exec`, { command: 'cd /srv && exec python3 -m http.server 8000 --bind 127.0.0.1', background: true, tag: 'web' })).status, 201);
    assert.equal((await api(daemon, 'POST', `/v1/sandboxes/${id}/exec`, { cmd: ['python3', '-c', WS_ECHO], background: true, tag: 'ws' })).status, 201);
    await waitFor(async () => (await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { 'x-forkd-token': token })).status === 200, 10_000, 'web server up');
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('HTTP by path and by host name, with the sandbox token or an API key of its tenant', async () => {
    const byHeader = await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { 'x-forkd-token': token });
    assert.deepEqual(byHeader, { status: 200, body: 'hello-from-sandbox\n' });
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt?forkd_token=${token}`)).body, 'hello-from-sandbox\n');
    assert.equal((await get(daemon.url, '/hello.txt', { host: `8000-${id}.sbx.test`, 'x-forkd-token': token })).body, 'hello-from-sandbox\n');
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { authorization: `Bearer ${daemon.apiKey}` })).status, 200);
    const big = await get(daemon.url, `/sandboxes/${id}/ports/8000/big.txt`, { 'x-forkd-token': token });
    assert.equal(big.body.length, Math.ceil(1048576 / 3) * 4, 'a 1 MB answer streams through whole');
  });

  test('refusals: no or wrong token, another tenant, a closed port, a bad port', async () => {
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`)).status, 401);
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { 'x-forkd-token': 'x'.repeat(32) })).status, 401);
    const other = (await api(daemon, 'POST', '/v1/keys', { tenant: 'other' })).json.key as string;
    const cross = await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { authorization: `Bearer ${other}` });
    assert.equal(cross.status, 404);
    assert.equal(JSON.parse(cross.body).error.code, 'NOT_FOUND');
    const closed = await get(daemon.url, `/sandboxes/${id}/ports/9/`, { 'x-forkd-token': token });
    assert.equal(closed.status, 503);
    assert.match(JSON.parse(closed.body).error.message, /nothing listens on port 9/);
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/70000/`, { 'x-forkd-token': token })).status, 400);
  });

  test('WebSocket through the proxy', async () => {
    const ws = new WebSocket(`${daemon.url.replace('http', 'ws')}/sandboxes/${id}/ports/8001/?forkd_token=${token}`);
    const echoed = await new Promise<string>((resolve, reject) => {
      ws.onopen = () => ws.send('ping through the proxy');
      ws.onmessage = (e) => resolve(String(e.data));
      ws.onerror = () => reject(new Error('websocket failed'));
    });
    ws.close();
    assert.equal(echoed, 'ping through the proxy');
  });

  test('clients that leave before a silent server answers, and a server that closes mid-answer, hold no connection: past the cap (64) the sandbox is still served', async () => {
    assert.equal((await api(daemon, 'POST', `/v1/sandboxes/${id}/exec`, { cmd: ['python3', '-c', HOSTILE], background: true, tag: 'hostile' })).status, 201);
    const u = new URL(daemon.url);
    // The first line of the proxy's answer on 8006 (its answer is cut, so no whole-answer helper).
    const statusLine = () =>
      new Promise<string>((resolve) => {
        const s = connect(Number(u.port), u.hostname);
        const done = (line: string) => {
          s.destroy();
          resolve(line);
        };
        s.on('error', () => done(''));
        s.once('data', (d: Buffer) => done(d.toString('latin1').split('\r\n')[0] ?? ''));
        s.on('close', () => done(''));
        s.write(`GET /sandboxes/${id}/ports/8006/ HTTP/1.1\r\nhost: x\r\nx-forkd-token: ${token}\r\n\r\n`);
      });
    await waitFor(async () => (await statusLine()).startsWith('HTTP/1.1 200'), 10_000, 'hostile servers up');
    // Each waits long enough to be connected to the silent server, then goes: 80 in all, more than the sandbox's 64.
    for (let batch = 0; batch < 8; batch++) {
      const left = Array.from({ length: 10 }, async () => {
        const s = connect(Number(u.port), u.hostname);
        s.on('error', () => {});
        s.write(`GET /sandboxes/${id}/ports/8005/ HTTP/1.1\r\nhost: x\r\nx-forkd-token: ${token}\r\n\r\n`);
        await sleep(300);
        s.destroy();
      });
      await Promise.all(left);
    }
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { 'x-forkd-token': token })).status, 200, 'the clients that left hold no connection');
    const cut = await new Promise<string>((resolve) => {
      http.get({ host: u.hostname, port: u.port, path: `/sandboxes/${id}/ports/8006/`, headers: { 'x-forkd-token': token } }, (res) => {
        let body = '';
        res.setEncoding('utf8').on('data', (d: string) => (body += d));
        res.on('error', () => resolve(`cut after ${JSON.stringify(body)}`));
        res.on('end', () => resolve(`ended after ${JSON.stringify(body)}`));
        res.on('close', () => resolve(`cut after ${JSON.stringify(body)}`));
      }).on('error', (err) => resolve(`error ${err.message}`));
    });
    assert.match(cut, /^cut after "0123456789"|^error/, 'a short answer reaches the client as cut, not as complete');
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { 'x-forkd-token': token })).status, 200, 'still served after the cut answer');
  });

  test('a paused sandbox is resumed by incoming traffic; a fork has its own token', async () => {
    assert.equal((await api(daemon, 'POST', `/v1/sandboxes/${id}/pause`)).json.state, 'paused');
    const woken = await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { 'x-forkd-token': token });
    assert.equal(woken.body, 'hello-from-sandbox\n', daemon.log().split('\n').filter((l) => /"level":"(error|warn)"/.test(l)).slice(-5).join('\n'));
    assert.equal((await api(daemon, 'GET', `/v1/sandboxes/${id}`)).json.state, 'running');
    const [fork] = (await api(daemon, 'POST', `/v1/sandboxes/${id}/fork`, {})).json.sandboxes;
    assert.ok(fork.proxyToken && fork.proxyToken !== token, 'forks do not inherit the parent token');
    assert.equal((await get(daemon.url, `/sandboxes/${fork.id}/ports/8000/hello.txt`, { 'x-forkd-token': token })).status, 401);
    assert.equal((await get(daemon.url, `/sandboxes/${fork.id}/ports/8000/hello.txt`, { 'x-forkd-token': fork.proxyToken })).body, 'hello-from-sandbox\n');
    await api(daemon, 'DELETE', `/v1/sandboxes/${fork.id}`);
  });

  test('the network namespaces\' holder killed with the daemon: after the restart its processes\' namespace is held again, the proxy reaches it', async () => {
    const holder = new NetnsHolder(join(cfg.config.runDir, 'netns'));
    const pid = holder.pid;
    assert.ok(pid > 0, 'a holder runs');
    await stopDaemonProcess(daemon, 'SIGKILL');
    process.kill(pid, 'SIGKILL');
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_PROXY_DOMAIN: 'sbx.test' });
    assert.notEqual(holder.pid, pid);
    assert.equal((await get(daemon.url, `/sandboxes/${id}/ports/8000/hello.txt`, { 'x-forkd-token': token })).body, 'hello-from-sandbox\n');
    assert.match(daemon.log(), /network namespace held again/);
  });
});
