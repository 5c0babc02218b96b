import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { after, describe, test } from 'node:test';
import { ForkdError } from '@forkd/protocol';
import { NodeHttpClient } from './node-http-client.js';
import type { NodeCallTimeouts } from './call-deadline.js';

/** Short deadlines, each kind its own, so a test tells which one a call had. */
const TIMEOUTS: NodeCallTimeouts = { readMs: 300, lifecycleMs: 700, transferMs: 1100 };
const SLACK_MS = 600;
const SBX = 'sbx-aaaaaaaaaaaa';

const servers: Array<{ close(): unknown }> = [];
const sockets = new Set<net.Socket>();
after(() => {
  for (const s of sockets) s.destroy();
  for (const s of servers) s.close();
});

function track(socket: net.Socket): void {
  sockets.add(socket);
  socket.on('error', () => {});
  socket.on('close', () => sockets.delete(socket));
}

/** A TCP server; `onSocket` does what the "node" does with each connection. Resolves with a client of it. */
async function node(onSocket: (s: net.Socket) => void, timeouts = TIMEOUTS): Promise<NodeHttpClient> {
  const srv = net.createServer((s) => {
    track(s);
    onSocket(s);
  });
  servers.push(srv);
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const { port } = srv.address() as net.AddressInfo;
  return new NodeHttpClient({ url: `http://127.0.0.1:${port}`, token: 'fnt_secret', timeouts });
}

/** Accepts and never answers (nor reads: a streamed upload fills the window and stalls). */
const silent = () => node(() => {});

/** Answers a head at once, then a JSON body one byte at a time that never ends. */
const trickleBody = () =>
  node((s) => {
    s.once('data', () => {
      s.write('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n1\r\n[\r\n');
      const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write('1\r\n \r\n')), 20);
    });
  });

/** Sends its status line, then a header byte now and then, never the end of the head. */
const trickleHead = () =>
  node((s) => {
    s.once('data', () => {
      s.write('HTTP/1.1 200 OK\r\nx-slow: ');
      const t = setInterval(() => (s.destroyed ? clearInterval(t) : s.write('a')), 20);
    });
  });

/** Rejects with TIMEOUT no sooner than `ms` and not much later; returns how long it took. */
async function timesOut(p: Promise<unknown>, ms: number, what: string): Promise<number> {
  const t0 = performance.now();
  await assert.rejects(p, (err: unknown) => err instanceof ForkdError && err.code === 'TIMEOUT' && /did not answer within/.test(err.message), what);
  const took = performance.now() - t0;
  assert.ok(took >= ms - 20 && took < ms + SLACK_MS, `${what}: ${Math.round(took)} ms, deadline ${ms} ms`);
  return took;
}

describe('node calls have deadlines: a node that hangs does not hold the control plane', () => {
  test('a node that accepts and never answers: each kind of call fails with TIMEOUT at its own deadline', async () => {
    const c = await silent();
    try {
      await Promise.all([
        timesOut(c.get(SBX), TIMEOUTS.readMs, 'get'),
        timesOut(c.list(), TIMEOUTS.readMs, 'list'),
        timesOut(c.stats(), TIMEOUTS.readMs, 'stats'),
        timesOut(c.readFile(SBX, '/etc/hosts'), TIMEOUTS.readMs, 'readFile'),
        timesOut(c.watch(SBX, '/', true, () => {}), TIMEOUTS.readMs, 'watch'),
        timesOut(c.pause(SBX), TIMEOUTS.lifecycleMs, 'pause'),
        timesOut(c.create({}), TIMEOUTS.lifecycleMs, 'create'),
        timesOut(c.fork(SBX, 2), TIMEOUTS.lifecycleMs, 'fork'),
        timesOut(c.spawn(SBX, { argv: ['true'] }), TIMEOUTS.lifecycleMs, 'spawn'),
        timesOut(c.connectPort(SBX, 8000), TIMEOUTS.lifecycleMs, 'connectPort'),
        timesOut(c.exportSnapshot('snap-aaaaaaaaaaaa'), TIMEOUTS.transferMs, 'exportSnapshot'),
        timesOut(c.importSnapshot('snapshots/x/manifest.json'), TIMEOUTS.transferMs, 'importSnapshot'),
        timesOut(c.buildTemplate({ name: 't', from: 'base', run: ['true'] } as never, () => {}), TIMEOUTS.transferMs, 'buildTemplate'),
      ]);
    } finally {
      c.close();
    }
  });

  test('a node that trickles its answer a byte at a time is cut at the deadline (it counts the whole answer, not idleness)', async () => {
    const body = await trickleBody();
    const head = await trickleHead();
    try {
      await timesOut(body.get(SBX), TIMEOUTS.readMs, 'a body that never ends');
      await timesOut(body.timeline(SBX), TIMEOUTS.readMs, 'a body that never ends (timeline)');
      await timesOut(head.list(), TIMEOUTS.readMs, 'a head that never ends');
      await timesOut(head.exportSnapshot('snap-aaaaaaaaaaaa'), TIMEOUTS.transferMs, 'a head that never ends (export)');
    } finally {
      body.close();
      head.close();
    }
  });

  test('an upload to a node that stops reading is cut once the socket stays idle for the deadline', async () => {
    const c = await silent();
    try {
      // Far more than the socket buffers take: the writes stall on a node that reads nothing.
      const chunk = Buffer.alloc(1 << 20, 1);
      const body = (async function* () {
        for (let i = 0; i < 256; i++) yield chunk;
      })();
      const t0 = performance.now();
      await assert.rejects(c.writeFile(SBX, '/tmp/big', body), (err: unknown) => err instanceof ForkdError && err.code === 'TIMEOUT');
      assert.ok(performance.now() - t0 < TIMEOUTS.lifecycleMs + 2000);
    } finally {
      c.close();
    }
  });

  test('a stream that started is not cut by the deadline: it lasts as long as the process', async () => {
    const srv = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(`${JSON.stringify({ type: 'started', pid: 7, pty: false, stream: 'st-1' })}\n`);
      // Quiet for longer than every deadline, then the exit.
      setTimeout(() => res.end(`${JSON.stringify({ type: 'exit', exitCode: 0, signal: 0, oomKilled: false })}\n`), TIMEOUTS.transferMs + 200);
    });
    servers.push(srv);
    srv.on('connection', track);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const c = new NodeHttpClient({ url: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`, token: 'fnt_secret', timeouts: TIMEOUTS });
    try {
      const s = await c.spawn(SBX, { argv: ['sleep', '1'] });
      assert.equal(s.process.pid, 7);
      assert.deepEqual(await s.exit, { exitCode: 0, signal: 0, oomKilled: false });
    } finally {
      c.close();
    }
  });

  test('a node answering garbage or too much is UNAVAILABLE, not a crash nor a buffer without end', async () => {
    const answer = (head: string, body: Buffer | string) =>
      node((s) => {
        s.once('data', () => {
          s.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${head}\r\n`);
          s.end(body);
        });
      }, { ...TIMEOUTS, readMs: 30_000 });
    const garbage = await answer('', '{"id": nope');
    const huge = await answer('', Buffer.alloc(65 * 1024 * 1024 + 1, 0x20));
    try {
      await assert.rejects(garbage.get(SBX), (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE' && /not JSON/.test(err.message));
      await assert.rejects(huge.list(), (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE' && (err.details?.limitBytes as number) > 0);
    } finally {
      garbage.close();
      huge.close();
    }
  });

  test('a deadline passed on one call leaves the client usable: the next call to a node that answers succeeds', async () => {
    let hang = true;
    const srv = http.createServer((_req, res) => {
      if (hang) return;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ templates: [] }));
    });
    servers.push(srv);
    srv.on('connection', track);
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
    const c = new NodeHttpClient({ url: `http://127.0.0.1:${(srv.address() as net.AddressInfo).port}`, token: 'fnt_secret', timeouts: TIMEOUTS });
    try {
      await timesOut(c.templates(), TIMEOUTS.readMs, 'hanging');
      hang = false;
      assert.deepEqual(await c.templates(), []);
    } finally {
      c.close();
    }
  });
});
