import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { ForkdError, type TemplateInfo } from '@forkd/protocol';
import { ForkdClient } from './client.js';
import { ndjson, sendJson, startFakeServer, streamEvents, type FakeRequest } from './fake-server.js';

const BASE: TemplateInfo = { name: 'base', createdAt: '2025-01-01T00:00:00.000Z', warm: false };
const PY: TemplateInfo = { name: 'py', createdAt: '2025-01-02T00:00:00.000Z', warm: true, from: 'base' };


/**
 * A scripted server for the template routes, shaped like the real one: `build`
 * answers POST /v1/templates (by default a stream that ends with `done`).
 */
async function withServer(fn: (client: ForkdClient, requests: FakeRequest[]) => Promise<void>, build?: (req: FakeRequest, res: ServerResponse) => Promise<void>) {
  const srv = await startFakeServer(async (req, res) => {
    const route = `${req.method} ${req.url.pathname}`;
    switch (route) {
      case 'GET /v1/templates':
        return sendJson(res, 200, { templates: [BASE, PY] });
      case 'POST /v1/templates':
        return (build ?? streamEvents([{ type: 'done', template: PY }], 5))(req, res);
      case 'DELETE /v1/templates/py':
        res.writeHead(204).end();
        return;
      case 'DELETE /v1/templates/base':
        return sendJson(res, 412, { error: { code: 'FAILED_PRECONDITION', message: 'the base template cannot be deleted' } });
    }
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${route}` } });
  });
  try {
    await fn(new ForkdClient({ url: srv.url }), srv.requests);
  } finally {
    await srv.close();
  }
}


test('list, and sandboxes.templates() still answers the same', async () => {
  await withServer(async (client, requests) => {
    assert.deepEqual(await client.templates.list(), [BASE, PY]);
    assert.deepEqual(await client.sandboxes.templates(), [BASE, PY]);
    assert.deepEqual(
      requests.map((r) => `${r.method} ${r.url.pathname}`),
      ['GET /v1/templates', 'GET /v1/templates'],
    );
  });
});

test('build sends the request as given, reports progress lines in order and resolves with the template', async () => {
  const events = [
    { type: 'progress', line: '$ pip install flask' },
    { type: 'progress', line: 'Collecting flask — café' },
    { type: 'something-newer', x: 1 },
    { type: 'progress', line: 'template py built (warm)' },
    { type: 'done', template: PY },
  ];
  await withServer(
    async (client, requests) => {
      const lines: string[] = [];
      const req = { name: 'py', from: 'base', setup: ['pip install flask', 'mkdir /app'], start: 'python3 -m http.server' };
      assert.deepEqual(await client.templates.build(req, { onProgress: (l) => lines.push(l) }), PY);
      assert.deepEqual(lines, ['$ pip install flask', 'Collecting flask — café', 'template py built (warm)']);
      const r = requests.at(-1)!;
      assert.equal(r.headers['content-type'], 'application/json');
      assert.deepEqual(JSON.parse(r.body.toString()), req);
      // Defaults are left to the server; no progress callback is fine.
      assert.deepEqual(await client.templates.build({ name: 'py' }), PY);
      assert.deepEqual(JSON.parse(requests.at(-1)!.body.toString()), { name: 'py' });
    },
    streamEvents(events, 5),
  );
});

test('an error line rejects with its code, message and details, after the progress before it', async () => {
  const events = [
    { type: 'progress', line: '$ false' },
    { type: 'error', error: { code: 'FAILED_PRECONDITION', message: 'setup command failed (exit 1): false', details: { outputTail: 'boom' } } },
  ];
  await withServer(
    async (client) => {
      const lines: string[] = [];
      await assert.rejects(client.templates.build({ name: 'py', setup: ['false'] }, { onProgress: (l) => lines.push(l) }), (err: unknown) => {
        assert.ok(err instanceof ForkdError);
        assert.equal(err.code, 'FAILED_PRECONDITION');
        assert.equal(err.message, 'setup command failed (exit 1): false');
        assert.deepEqual(err.details, { outputTail: 'boom' });
        return true;
      });
      assert.deepEqual(lines, ['$ false']);
    },
    streamEvents(events, 5),
  );
});

test('a build stream that ends without done or error is UNAVAILABLE', async () => {
  await withServer(
    async (client) => {
      await assert.rejects(client.templates.build({ name: 'py' }), (err: unknown) => {
        assert.ok(err instanceof ForkdError);
        assert.equal(err.code, 'UNAVAILABLE');
        assert.match(err.message, /template py ended before the build finished/);
        return true;
      });
    },
    streamEvents([{ type: 'progress', line: '$ make' }], 5),
  );
});

test('a build refused before streaming rejects with the JSON error', async () => {
  await withServer(
    async (client) => {
      await assert.rejects(client.templates.build({ name: 'Bad Name' }), { name: 'ForkdError', code: 'INVALID_ARGUMENT', message: 'name: invalid template name' });
    },
    async (_req, res) => sendJson(res, 400, { error: { code: 'INVALID_ARGUMENT', message: 'name: invalid template name' } }),
  );
});

test('aborting a build stops waiting with CANCELLED', async () => {
  await withServer(
    async (client) => {
      const abort = new AbortController();
      const p = client.templates.build({ name: 'py' }, { abortSignal: abort.signal, onProgress: () => abort.abort() });
      await assert.rejects(p, { name: 'ForkdError', code: 'CANCELLED' });
    },
    async (_req, res) => {
      // One progress line, then silence: only the abort can end the wait.
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      res.write(ndjson([{ type: 'progress', line: 'working' }]));
    },
  );
});

test('delete: 204, base is FAILED_PRECONDITION, unknown NOT_FOUND, names escaped into the path', async () => {
  await withServer(async (client, requests) => {
    await client.templates.delete('py');
    assert.equal(requests.at(-1)!.method, 'DELETE');
    await assert.rejects(client.templates.delete('base'), { name: 'ForkdError', code: 'FAILED_PRECONDITION' });
    await assert.rejects(client.templates.delete('a/b?c'), { name: 'ForkdError', code: 'NOT_FOUND' });
    assert.equal(requests.at(-1)!.url.pathname, '/v1/templates/a%2Fb%3Fc');
  });
});
