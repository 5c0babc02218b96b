import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import type { ServerResponse } from 'node:http';
import { serveHttp } from './http-server.js';
import { silentLogger } from './logger.js';
import { OpenStreams } from './open-streams.js';

test('OpenStreams: endAll ends every stream open, and any added after it at once', () => {
  const streams = new OpenStreams();
  const ended: string[] = [];
  streams.add(() => ended.push('a'));
  const unregister = streams.add(() => ended.push('b'));
  unregister();
  assert.equal(streams.endAll(), 1);
  assert.deepEqual(ended, ['a']);
  streams.add(() => ended.push('late'));
  assert.deepEqual(ended, ['a', 'late']);
  assert.equal(streams.endAll(), 0);
});

test('a stopping server refuses a request that comes on an open connection (503 UNAVAILABLE, closed) instead of starting a stream nothing ends', async () => {
  const streams = new OpenStreams();
  // A stream: open until the stop ends it (as a process stream is), its last output sent a little later.
  const listener = (_req: unknown, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.write('streaming\n');
    const unregister = streams.add(() => setTimeout(() => res.end('ended\n'), 100));
    res.on('close', unregister);
  };
  const server = await serveHttp({ listener, host: '127.0.0.1', port: 0, logger: silentLogger, endStreams: () => streams.endAll() });
  const socket = connect(server.port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => (text += d.toString()));
  const closed = new Promise<void>((r) => socket.on('close', () => r()));
  const req = 'GET /stream HTTP/1.1\r\nhost: x\r\n\r\n';
  socket.write(req);
  const until = Date.now() + 5000;
  while (!text.includes('streaming') && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
  const t0 = Date.now();
  const stopped = server.close();
  // After the stop began, on the same connection (still busy: not closed as idle): a client re-attaching.
  await new Promise((r) => setTimeout(r, 10));
  socket.write(req);
  await stopped;
  const stopMs = Date.now() - t0;
  await closed;
  const answers = text.split(/(?=HTTP\/1\.1 )/);
  assert.equal(answers.length, 2, text);
  assert.match(answers[0]!, /^HTTP\/1\.1 200 [\s\S]*streaming[\s\S]*ended/);
  assert.match(answers[1]!, /^HTTP\/1\.1 503 /);
  assert.match(answers[1]!, /connection: close/i);
  assert.match(answers[1]!, /"code":"UNAVAILABLE"/);
  assert.ok(stopMs < 1000, `the stop waited ${stopMs} ms (its grace is for streams that were open)`);
});
