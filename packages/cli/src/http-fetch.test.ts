import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient, ForkdError } from '@forkd/sdk';
import { ndjson, sandboxInfo, sendJson, startFakeServer, type FakeServer } from '@forkd/sdk/testing';
import { httpFetch } from './http-fetch.js';

const client = (srv: FakeServer, apiKey = 'k') => new ForkdClient({ url: srv.url, apiKey, fetch: httpFetch });

async function withServer(handler: Parameters<typeof startFakeServer>[0], fn: (srv: FakeServer) => Promise<void>): Promise<void> {
  const srv = await startFakeServer(handler);
  try {
    await fn(srv);
  } finally {
    await srv.close();
  }
}

test('JSON calls: bearer key, JSON body, the answer parsed; error bodies keep code, message and request id', async () => {
  await withServer(
    (req, res) => {
      if (req.url.pathname.endsWith('/missing')) {
        res.setHeader('x-request-id', 'req-1');
        return sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'no sandbox sbx-missing' } });
      }
      sendJson(res, 201, sandboxInfo('sbx-1'));
    },
    async (srv) => {
      const sb = await client(srv).sandboxes.create({ template: 'base' });
      assert.equal(sb.id, 'sbx-1');
      const r = srv.requests[0]!;
      assert.equal(r.method, 'POST');
      assert.equal(r.headers.authorization, 'Bearer k');
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(r.headers['content-length'], String(r.body.length));
      assert.deepEqual(JSON.parse(r.body.toString()), { template: 'base' });
      await assert.rejects(client(srv).sandboxes.get('missing'), (err: unknown) => {
        assert.ok(err instanceof ForkdError);
        assert.equal(err.code, 'NOT_FOUND');
        assert.equal(err.message, 'no sandbox sbx-missing');
        assert.equal(err.requestId, 'req-1');
        return true;
      });
    },
  );
});

test('a streamed NDJSON answer is read as it comes: exec output, exit code', async () => {
  const events = [{ type: 'started', pid: 7 }, { type: 'stdout', data: Buffer.from('hello\n').toString('base64') }, { type: 'stderr', data: Buffer.from('warn\n').toString('base64') }, { type: 'exit', exitCode: 3, signal: null, oomKilled: false }];
  await withServer(
    async (req, res) => {
      if (req.method === 'GET') return sendJson(res, 200, sandboxInfo('sbx-1'));
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      for (const line of ndjson(events).match(/[^]{1,7}/g)!) {
        res.write(line);
        await new Promise((r) => setTimeout(r, 1));
      }
      res.end();
    },
    async (srv) => {
      const sb = await client(srv).sandboxes.get('sbx-1');
      const r = await sb.exec(['sh', '-c', 'x']);
      assert.deepEqual({ pid: r.pid, exitCode: r.exitCode, stdout: r.stdout, stderr: r.stderr }, { pid: 7, exitCode: 3, stdout: 'hello\n', stderr: 'warn\n' });
    },
  );
});

test('a streamed upload is sent chunked, byte for byte', async () => {
  await withServer(
    (_req, res) => sendJson(res, 200, { ok: true }),
    async (srv) => {
      const parts = [Buffer.alloc(70_000, 1), Buffer.from('tail')];
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          for (const p of parts) c.enqueue(p);
          c.close();
        },
      });
      const res = await httpFetch(`${srv.url}/v1/upload`, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body, duplex: 'half', redirect: 'error' });
      assert.equal(res.status, 200);
      const up = srv.requests.at(-1)!;
      assert.equal(up.headers['transfer-encoding'], 'chunked');
      assert.deepEqual(up.body, Buffer.concat(parts));
    },
  );
});

test('an unreachable server is UNAVAILABLE and names the URL', async () => {
  const srv = await startFakeServer(() => {});
  await srv.close();
  await assert.rejects(client(srv).health(), (err: unknown) => {
    assert.ok(err instanceof ForkdError);
    assert.equal(err.code, 'UNAVAILABLE');
    assert.match(err.message, /cannot reach forkd at http:\/\/127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    return true;
  });
});

test('an abort before the answer and one while its body streams are both CANCELLED', async () => {
  await withServer(
    (req, res) => {
      if (req.method === 'GET' && req.url.pathname === '/v1/sandboxes/s') return sendJson(res, 200, sandboxInfo('s'));
      if (req.method === 'GET') return; // attach: never answers
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(ndjson([{ type: 'started', pid: 1 }])); // exec: started, then silence
    },
    async (srv) => {
      const sb = await client(srv).sandboxes.get('s');
      const early = new AbortController();
      setTimeout(() => early.abort(), 50);
      await assert.rejects(sb.attach(1, { abortSignal: early.signal }), { name: 'ForkdError', code: 'CANCELLED' });
      const late = new AbortController();
      await assert.rejects(sb.exec(['sleep', '9'], { abortSignal: late.signal, onStarted: () => late.abort() }), { name: 'ForkdError', code: 'CANCELLED' });
    },
  );
});

test('redirects are followed like fetch does (303 turns a POST into a GET); a streamed upload refuses one', async () => {
  await withServer(
    (req, res) => {
      if (req.url.pathname === '/old') {
        res.writeHead(303, { location: '/new' });
        res.end();
        return;
      }
      sendJson(res, 200, { method: req.method, body: req.body.toString() });
    },
    async (srv) => {
      const res = await httpFetch(`${srv.url}/old`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
      assert.deepEqual(await res.json(), { method: 'GET', body: '' });
      const body = new ReadableStream<Uint8Array>({ start: (c) => c.close() });
      await assert.rejects(httpFetch(`${srv.url}/old`, { method: 'PUT', headers: {}, body, duplex: 'half', redirect: 'error' }), /cannot follow/);
    },
  );
});
