import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpTransport } from './http-transport.js';
import { SandboxFiles } from './sandbox-files.js';
import { sendJson, startFakeServer } from './fake-server.js';

const ID = 'sbx-aaaaaaaaaaaa';

test('write streams iterables and sends mode; read returns bytes', async () => {
  const srv = await startFakeServer((req, res) => {
    if (req.method === 'PUT') return sendJson(res, 201, { path: req.url.searchParams.get('path'), size: req.body.length });
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    res.end(Buffer.from([0, 1, 2, 255]));
  });
  try {
    const files = new SandboxFiles(new HttpTransport({ url: srv.url }), ID);
    async function* parts() {
      yield 'abc';
      yield new Uint8Array([1, 2, 3]);
    }
    assert.deepEqual(await files.write('/w/x.bin', parts(), { mode: 0o755 }), { path: '/w/x.bin', size: 6 });
    const put = srv.requests[0]!;
    assert.equal(put.url.pathname, `/v1/sandboxes/${ID}/files`);
    assert.equal(put.url.searchParams.get('mode'), String(0o755));
    assert.deepEqual([...put.body], [...Buffer.from('abc'), 1, 2, 3]);

    await files.write('/w/t.txt', 'héllo');
    assert.equal(srv.requests[1]!.body.toString(), 'héllo');

    assert.deepEqual([...(await files.read('/w/x.bin'))], [0, 1, 2, 255]);
  } finally {
    await srv.close();
  }
});

test('watch resolves once established, delivers events, and close ends it', async () => {
  const srv = await startFakeServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    res.write('{"type":"create","name":"a"}\n{"type":"wr');
    setTimeout(() => res.write('ite","name":"a"}\n'), 10);
  });
  try {
    const files = new SandboxFiles(new HttpTransport({ url: srv.url }), ID);
    const events: unknown[] = [];
    let got!: () => void;
    const two = new Promise<void>((r) => (got = r));
    const w = await files.watch('/w', (e) => {
      events.push(e);
      if (events.length === 2) got();
    }, { recursive: true });
    await two;
    assert.deepEqual(events, [{ type: 'create', name: 'a' }, { type: 'write', name: 'a' }]);
    assert.equal(srv.requests[0]!.url.searchParams.get('recursive'), 'true');
    w.close();
    await w.done;
  } finally {
    await srv.close();
  }
});
