import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { sendJson, startFakeServer } from './fake-server.js';
import { HttpTransport } from './http-transport.js';
import { ForkdClient } from './client.js';

test('error bodies are rebuilt into ForkdErrors with code, message and details', async () => {
  const srv = await startFakeServer((req, res) => {
    if (req.url.pathname.endsWith('/missing')) sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'no sandbox sbx-missing' } });
    else sendJson(res, 412, { error: { code: 'FAILED_PRECONDITION', message: 'not running', details: { stderrTail: 'boom' } } });
  });
  try {
    const http = new HttpTransport({ url: srv.url });
    await assert.rejects(http.json('GET', '/v1/sandboxes/missing'), (err: unknown) => {
      assert.ok(err instanceof ForkdError);
      assert.equal(err.code, 'NOT_FOUND');
      assert.equal(err.message, 'no sandbox sbx-missing');
      assert.equal(err.status, 404);
      return true;
    });
    await assert.rejects(http.send('POST', '/v1/x', { json: {} }), (err: unknown) => {
      assert.ok(err instanceof ForkdError);
      assert.equal(err.code, 'FAILED_PRECONDITION');
      assert.deepEqual(err.details, { stderrTail: 'boom' });
      return true;
    });
  } finally {
    await srv.close();
  }
});

test('answers that are not forkd errors are mapped by status', async () => {
  const srv = await startFakeServer((req, res) => {
    res.writeHead(req.url.pathname === '/bad-gateway' ? 502 : 401, { 'content-type': 'text/html' });
    res.end('<html>nope</html>');
  });
  try {
    const http = new HttpTransport({ url: srv.url });
    await assert.rejects(http.send('GET', '/bad-gateway'), { name: 'ForkdError', code: 'UNAVAILABLE' });
    await assert.rejects(http.send('GET', '/other'), { name: 'ForkdError', code: 'UNAUTHENTICATED', message: /HTTP 401.*nope/ });
  } finally {
    await srv.close();
  }
});

test('an unreachable server is UNAVAILABLE and names the URL', async () => {
  const srv = await startFakeServer(() => {});
  const url = srv.url;
  await srv.close();
  const client = new ForkdClient({ url });
  await assert.rejects(client.health(), (err: unknown) => {
    assert.ok(err instanceof ForkdError);
    assert.equal(err.code, 'UNAVAILABLE');
    assert.match(err.message, new RegExp(url.replace(/[.]/g, '\\.')));
    return true;
  });
});

test('the API key is sent as a bearer token, query values are encoded, JSON bodies typed', async () => {
  const srv = await startFakeServer((_req, res) => sendJson(res, 200, { ok: true }));
  try {
    const http = new HttpTransport({ url: srv.url + '/', apiKey: 'k3y' });
    await http.json('POST', '/v1/q', { query: { path: '/a b&c', depth: 2, skip: undefined }, json: { a: 1 } });
    const r = srv.requests[0]!;
    assert.equal(r.headers.authorization, 'Bearer k3y');
    assert.equal(r.headers['content-type'], 'application/json');
    assert.equal(r.url.pathname, '/v1/q');
    assert.equal(r.url.searchParams.get('path'), '/a b&c');
    assert.equal(r.url.searchParams.get('depth'), '2');
    assert.equal(r.url.searchParams.has('skip'), false);
    assert.deepEqual(JSON.parse(r.body.toString()), { a: 1 });

    await new HttpTransport({ url: srv.url }).json('GET', '/v1/health');
    assert.equal(srv.requests[1]!.headers.authorization, undefined);
  } finally {
    await srv.close();
  }
});

test('an aborted request is CANCELLED', async () => {
  const srv = await startFakeServer(() => {});
  try {
    const http = new HttpTransport({ url: srv.url });
    const abort = new AbortController();
    const p = http.request('GET', '/hang', { signal: abort.signal });
    setTimeout(() => abort.abort(), 20);
    await assert.rejects(p, { name: 'ForkdError', code: 'CANCELLED' });
  } finally {
    await srv.close();
  }
});

test('URLs: host:port gets http://, trailing slashes go, ws URLs follow the scheme, garbage is refused', () => {
  assert.equal(new HttpTransport({ url: '127.0.0.1:9/' }).baseUrl, 'http://127.0.0.1:9');
  assert.equal(new HttpTransport({ url: 'https://h/prefix/' }).wsUrl('/v1/x'), 'wss://h/prefix/v1/x');
  assert.throws(() => new HttpTransport({ url: 'http://' }), { name: 'ForkdError', code: 'INVALID_ARGUMENT' });
});

test('FORKD_URL and FORKD_API_KEY are the defaults', async () => {
  const srv = await startFakeServer((_req, res) => sendJson(res, 200, { ok: true }));
  const saved = { url: process.env.FORKD_URL, key: process.env.FORKD_API_KEY };
  try {
    process.env.FORKD_URL = srv.url;
    process.env.FORKD_API_KEY = 'from-env';
    const client = new ForkdClient();
    assert.equal(client.url, srv.url);
    assert.deepEqual(await client.health(), { ok: true });
    assert.equal(srv.requests[0]!.headers.authorization, 'Bearer from-env');
  } finally {
    if (saved.url === undefined) delete process.env.FORKD_URL;
    else process.env.FORKD_URL = saved.url;
    if (saved.key === undefined) delete process.env.FORKD_API_KEY;
    else process.env.FORKD_API_KEY = saved.key;
    await srv.close();
  }
});
