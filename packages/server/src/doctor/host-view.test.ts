import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostView } from './host-view.js';

async function serve(handler: Parameters<typeof createServer>[1]): Promise<{ url: string; server: Server }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

test('health: GET /v1/health over real HTTP: healthy, unhealthy (503), foreign, down', async () => {
  const host = hostView();
  const paths: string[] = [];
  const ok = await serve((req, res) => {
    paths.push(req.url ?? '');
    res.setHeader('content-type', 'application/json');
    res.end('{"ok":true}');
  });
  const sick = await serve((_req, res) => {
    res.statusCode = 503;
    res.end('{"error":{"code":"UNAVAILABLE","message":"database"}}');
  });
  const other = await serve((_req, res) => {
    res.statusCode = 404;
    res.end('not found');
  });
  try {
    assert.deepEqual(await host.health(ok.url), { kind: 'healthy' });
    assert.deepEqual(paths, ['/v1/health']);
    const h = await host.health(sick.url);
    assert.equal(h.kind, 'unhealthy');
    assert.match(h.kind === 'unhealthy' ? h.detail : '', /UNAVAILABLE/);
    assert.deepEqual(await host.health(other.url), { kind: 'foreign', detail: 'HTTP 404' });
  } finally {
    for (const s of [ok, sick, other]) s.server.close();
  }
  const closed = await serve(() => {});
  closed.server.close();
  await new Promise((r) => closed.server.once('close', r));
  assert.deepEqual(await host.health(closed.url), { kind: 'down', detail: 'ECONNREFUSED' });
});

test('health: an endless body from whatever answers is read only a few KiB and judged', async () => {
  let sent = 0;
  const flood = await serve((_req, res) => {
    res.statusCode = 503;
    const chunk = Buffer.alloc(64 * 1024, 'x');
    const more = () => {
      while (sent < 1024 * 2 ** 20 && res.write(chunk)) sent += chunk.length;
      if (sent < 1024 * 2 ** 20) res.once('drain', more);
      else res.end();
    };
    res.on('close', () => res.removeAllListeners('drain'));
    more();
  });
  try {
    const t0 = Date.now();
    const h = await hostView().health(flood.url);
    assert.equal(h.kind, 'unhealthy');
    assert.ok(h.kind === 'unhealthy' && h.detail.length <= 300);
    assert.ok(sent < 64 * 2 ** 20, `read ${sent} bytes`);
    assert.ok(Date.now() - t0 < 2500);
  } finally {
    flood.server.closeAllConnections();
    flood.server.close();
  }
});
