import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { ForkdClient } from './client.js';
import { sandboxInfo, sendJson, startFakeServer, streamEvents, type FakeRequest } from './fake-server.js';

const ID = 'sbx-aaaaaaaaaaaa';
const info: SandboxInfo = sandboxInfo(ID);

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/** A server that answers GET sandbox with `info` and exec with the scripted NDJSON, written 7 bytes at a time. */
async function withServer(execBody: (req: FakeRequest, res: ServerResponse) => Promise<void>, fn: (client: ForkdClient, requests: FakeRequest[]) => Promise<void>) {
  const srv = await startFakeServer(async (req, res) => {
    if (req.method === 'GET' && req.url.pathname === `/v1/sandboxes/${ID}`) return sendJson(res, 200, info);
    if (req.method === 'POST' && req.url.pathname === `/v1/sandboxes/${ID}/exec`) return execBody(req, res);
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${req.method} ${req.url.pathname}` } });
  });
  try {
    await fn(new ForkdClient({ url: srv.url }), srv.requests);
  } finally {
    await srv.close();
  }
}


test('exec assembles stdout/stderr, streams chunks to callbacks, and reports the exit', async () => {
  // "é" is split across two stdout events: the result must still decode it.
  const e = Buffer.from('é');
  const events = [
    { type: 'started', pid: 42, pty: false },
    { type: 'stdout', data: b64('hello ') },
    { type: 'stderr', data: b64('warn\n') },
    { type: 'stdout', data: b64(Buffer.concat([Buffer.from('caf'), e.subarray(0, 1)])) },
    { type: 'stdout', data: b64(Buffer.concat([e.subarray(1), Buffer.from('\n')])) },
    { type: 'exit', exitCode: 3, signal: 0, oomKilled: false },
  ];
  await withServer(streamEvents(events, 7), async (client, requests) => {
    const sb = await client.sandboxes.get(ID);
    const chunks: Uint8Array[] = [];
    let started = 0;
    const r = await sb.exec(['sh', '-c', 'x'], { env: { A: '1' }, cwd: '/tmp', stdin: 'input', onStdout: (c) => chunks.push(c), onStarted: (p) => (started = p.pid) });
    assert.deepEqual(r, { pid: 42, exitCode: 3, signal: 0, oomKilled: false, stdout: 'hello café\n', stderr: 'warn\n' });
    assert.equal(started, 42);
    assert.equal(Buffer.concat(chunks).toString(), 'hello café\n');
    const body = JSON.parse(requests[1]!.body.toString());
    assert.deepEqual(body, { cmd: ['sh', '-c', 'x'], env: { A: '1' }, cwd: '/tmp', stdinData: b64('input') });
  });
});

test('exec with a string runs it as `command`; utf8 callbacks get text; capture:false keeps the result empty', async () => {
  const events = [
    { type: 'started', pid: 9, pty: false },
    { type: 'stdout', data: b64('a\nb\n') },
    { type: 'exit', exitCode: 0, signal: 9, oomKilled: true },
  ];
  await withServer(streamEvents(events, 7), async (client, requests) => {
    const sb = await client.sandboxes.get(ID);
    let text = '';
    const r = await sb.exec('echo a; echo b', { encoding: 'utf8', onStdout: (s) => (text += s), capture: false, timeoutMs: 1000 });
    assert.equal(text, 'a\nb\n');
    assert.deepEqual(r, { pid: 9, exitCode: 0, signal: 9, oomKilled: true, stdout: '', stderr: '' });
    assert.deepEqual(JSON.parse(requests[1]!.body.toString()), { command: 'echo a; echo b', timeoutMs: 1000 });
  });
});

test('an exec stream that ends without exit rejects with a clear UNAVAILABLE error', async () => {
  await withServer(streamEvents([{ type: 'started', pid: 5, pty: false }, { type: 'stdout', data: b64('x') }], 7), async (client) => {
    const sb = await client.sandboxes.get(ID);
    await assert.rejects(sb.exec(['sleep', '100']), (err: unknown) => {
      assert.ok(err instanceof ForkdError);
      assert.equal(err.code, 'UNAVAILABLE');
      assert.match(err.message, /process 5 exited.*detached/);
      assert.deepEqual(err.details, { pid: 5 });
      return true;
    });
  });
});

test('an error event rejects with its code', async () => {
  await withServer(streamEvents([{ type: 'started', pid: 5, pty: false }, { type: 'error', error: { code: 'TIMEOUT', message: 'guest gone' } }], 7), async (client) => {
    const sb = await client.sandboxes.get(ID);
    await assert.rejects(sb.exec(['x']), { name: 'ForkdError', code: 'TIMEOUT', message: 'guest gone' });
  });
});

test('an exec refused before starting rejects with the server error', async () => {
  await withServer(
    async (_req, res) => sendJson(res, 400, { error: { code: 'INVALID_ARGUMENT', message: 'cmd: too short' } }),
    async (client) => {
      const sb = await client.sandboxes.get(ID);
      await assert.rejects(sb.exec([]), { name: 'ForkdError', code: 'INVALID_ARGUMENT' });
    },
  );
});

test('spawnBackground returns the pid and tag', async () => {
  await withServer(
    async (_req, res) => sendJson(res, 201, { pid: 77, tag: 'web' }),
    async (client, requests) => {
      const sb = await client.sandboxes.get(ID);
      assert.deepEqual(await sb.spawnBackground('python3 -m http.server', { tag: 'web', openStdin: true }), { pid: 77, tag: 'web' });
      assert.deepEqual(JSON.parse(requests[1]!.body.toString()), { command: 'python3 -m http.server', tag: 'web', stdin: true, background: true });
    },
  );
});
