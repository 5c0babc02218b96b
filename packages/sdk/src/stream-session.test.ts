import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { StreamSession } from './stream-session.js';
import type { WebSocketLike } from './websocket.js';

/** An in-memory WebSocket: the test plays the server. */
class FakeSocket implements WebSocketLike {
  binaryType = 'arraybuffer';
  readyState = 0;
  bufferedAmount = 0;
  sent: (string | Uint8Array)[] = [];
  readonly #listeners = new Map<string, ((ev: never) => void)[]>();

  addEventListener(type: string, listener: (ev: never) => void): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
  }
  send(data: string | ArrayBufferView | ArrayBuffer): void {
    this.sent.push(typeof data === 'string' ? data : new Uint8Array(ArrayBuffer.isView(data) ? data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) : data));
  }
  close(code = 1000): void {
    this.serverClose(code);
  }
  // server side
  emit(type: string, ev: object): void {
    for (const l of this.#listeners.get(type) ?? []) (l as (e: object) => void)(ev);
  }
  serverOpen(): void {
    this.readyState = 1;
    this.emit('open', {});
  }
  serverText(obj: object): void {
    this.emit('message', { data: JSON.stringify(obj) });
  }
  serverBinary(stream: number, text: string): void {
    const body = new TextEncoder().encode(text);
    const frame = new Uint8Array(body.length + 1);
    frame[0] = stream;
    frame.set(body, 1);
    this.emit('message', { data: frame.buffer });
  }
  serverClose(code: number): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.emit('close', { code, reason: '' });
  }
}

test('open handshake, early output replayed to late listeners, stdin and control messages, exit', async () => {
  const ws = new FakeSocket();
  const opening = StreamSession.open(ws, { op: 'spawn', spawn: { cmd: ['cat'] } });
  ws.serverOpen();
  assert.deepEqual(JSON.parse(ws.sent[0] as string), { op: 'spawn', spawn: { cmd: ['cat'] } });
  ws.serverText({ type: 'started', pid: 12, tag: 't', pty: false });
  ws.serverBinary(1, 'early ');
  ws.serverBinary(2, 'err');
  const s = await opening;
  assert.equal(s.pid, 12);
  assert.equal(s.tag, 't');
  let out = '';
  let err = '';
  s.onStdout((c) => (out += new TextDecoder().decode(c)));
  s.onStderr((c) => (err += new TextDecoder().decode(c)));
  ws.serverBinary(1, 'late');
  assert.equal(out, 'early late');
  assert.equal(err, 'err');

  await s.write('hi');
  s.closeStdin();
  s.resize(100, 40);
  s.signal('SIGINT');
  assert.equal(new TextDecoder().decode(ws.sent[1] as Uint8Array), 'hi');
  assert.deepEqual(ws.sent.slice(2).map((m) => JSON.parse(m as string)), [{ type: 'stdin_eof' }, { type: 'resize', cols: 100, rows: 40 }, { type: 'signal', signal: 'SIGINT' }]);

  ws.serverText({ type: 'exit', exitCode: 0, signal: 0, oomKilled: false });
  ws.serverClose(1000);
  assert.deepEqual(await s.exit, { exitCode: 0, signal: 0, oomKilled: false });
});

test('large writes are split into frames the server accepts', async () => {
  const ws = new FakeSocket();
  const opening = StreamSession.open(ws, { op: 'attach', pid: 3 });
  ws.serverOpen();
  ws.serverText({ type: 'started', pid: 3, pty: true });
  const s = await opening;
  await s.write(new Uint8Array(600 * 1024));
  const frames = ws.sent.slice(1) as Uint8Array[];
  assert.deepEqual(frames.map((f) => f.byteLength), [256 * 1024, 256 * 1024, 88 * 1024]);
});

test('an error before started rejects open with the server code', async () => {
  const ws = new FakeSocket();
  const opening = StreamSession.open(ws, { op: 'spawn', spawn: {} });
  ws.serverOpen();
  ws.serverText({ type: 'error', error: { code: 'NOT_FOUND', message: 'no sandbox' } });
  ws.serverClose(1011);
  await assert.rejects(opening, (err: unknown) => err instanceof ForkdError && err.code === 'NOT_FOUND');
});

test('a socket that cannot connect rejects open with UNAVAILABLE', async () => {
  const ws = new FakeSocket();
  const opening = StreamSession.open(ws, { op: 'spawn', spawn: {} });
  ws.emit('error', {});
  ws.serverClose(1006);
  await assert.rejects(opening, (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE');
});

test('closing without exit resolves exit with null (detached), and writes then fail', async () => {
  const ws = new FakeSocket();
  const opening = StreamSession.open(ws, { op: 'spawn', spawn: {} });
  ws.serverOpen();
  ws.serverText({ type: 'started', pid: 4, pty: false });
  const s = await opening;
  s.close();
  assert.equal(await s.exit, null);
  await assert.rejects(s.write('x'), { name: 'ForkdError', code: 'FAILED_PRECONDITION' });
});

test('waiting frames: the context when well-formed, callbacks in the order of the frames', async () => {
  const ws = new FakeSocket();
  const seen: string[] = [];
  const opening = StreamSession.open(ws, { op: 'spawn', spawn: { cmd: ['make'] } }, (w) => seen.push(`waiting ${w.approvalId} ${JSON.stringify(w.context ?? null)}`));
  ws.serverOpen();
  // The first waiting frame loads the schema: the frames behind it wait for it.
  ws.serverText({ type: 'waiting', approvalId: 'apr-1', rule: 'r', expiresAt: 'x', context: { env: { A: '1' }, cwd: '/w' } });
  ws.serverText({ type: 'waiting', approvalId: 'apr-2', rule: 'r', expiresAt: 'x', context: { env: 'not a record' } });
  ws.serverText({ type: 'started', pid: 7, pty: false });
  const s = await opening.then((session) => (seen.push('started'), session));
  ws.serverText({ type: 'exit', exitCode: 0, signal: 0, oomKilled: false });
  ws.serverClose(1000);
  assert.deepEqual(await s.exit, { exitCode: 0, signal: 0, oomKilled: false });
  assert.deepEqual(seen, ['waiting apr-1 {"env":{"A":"1"},"cwd":"/w"}', 'waiting apr-2 null', 'started']);
});
