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

test('a socket gone before the exit (a daemon restart) resumes on a new one from the position received, writes waiting meanwhile', async () => {
  const sockets: FakeSocket[] = [];
  const connect = () => {
    const ws = new FakeSocket();
    sockets.push(ws);
    return ws;
  };
  const opening = StreamSession.open(connect(), { op: 'spawn', spawn: {} }, undefined, { connect, reconnectMs: 10_000 });
  const first = sockets[0]!;
  first.serverOpen();
  first.serverText({ type: 'started', pid: 9, pty: false, token: 77, offset: 0 });
  const s = await opening;
  let out = '';
  s.onStdout((c) => (out += new TextDecoder().decode(c)));
  first.serverBinary(1, 'one\n');
  first.serverBinary(2, 'e\n');
  first.serverClose(1012);
  const writing = s.write('later');
  // forkd is down: the first attempt cannot connect, the next one (after the backoff) is answered.
  await waitUntil(() => sockets.length === 2);
  sockets[1]!.emit('error', {});
  sockets[1]!.serverClose(1006);
  await waitUntil(() => sockets.length === 3);
  const third = sockets[2]!;
  third.serverOpen();
  assert.deepEqual(JSON.parse(third.sent[0] as string), { op: 'attach', pid: 9, resume: { token: 77, offset: 5 + 4 + 5 + 2 } });
  third.serverText({ type: 'started', pid: 9, pty: false, token: 77, offset: 16 });
  third.serverBinary(1, 'two\n');
  await writing;
  assert.equal(new TextDecoder().decode(third.sent[1] as Uint8Array), 'later');
  third.serverText({ type: 'exit', exitCode: 3, signal: 0, oomKilled: false });
  third.serverClose(1000);
  assert.deepEqual(await s.exit, { exitCode: 3, signal: 0, oomKilled: false });
  assert.equal(out, 'one\ntwo\n');
  assert.equal(s.pid, 9);
});

test('resuming stops at a refusal (the process is gone) and at the time limit; without a resume point the exit is null', async () => {
  const sockets: FakeSocket[] = [];
  const connect = () => {
    const ws = new FakeSocket();
    sockets.push(ws);
    return ws;
  };
  const opening = StreamSession.open(connect(), { op: 'attach', pid: 2 }, undefined, { connect, reconnectMs: 10_000 });
  sockets[0]!.serverOpen();
  sockets[0]!.serverText({ type: 'started', pid: 2, pty: false, token: 1, offset: 100 });
  const s = await opening;
  sockets[0]!.serverClose(1006);
  await waitUntil(() => sockets.length === 2);
  sockets[1]!.serverOpen();
  sockets[1]!.serverText({ type: 'error', error: { code: 'NOT_FOUND', message: 'no such process' } });
  sockets[1]!.serverClose(1011);
  await assert.rejects(s.exit, { name: 'ForkdError', code: 'NOT_FOUND' });

  const again: FakeSocket[] = [];
  const connect2 = () => {
    const ws = new FakeSocket();
    again.push(ws);
    // As Node 20's WebSocket reports a refused connection: an error event, no close.
    queueMicrotask(() => ws.emit('error', {}));
    return ws;
  };
  const firstSock = new FakeSocket();
  const opening3 = StreamSession.open(firstSock, { op: 'attach', pid: 2 }, undefined, { connect: connect2, reconnectMs: 250 });
  firstSock.serverOpen();
  firstSock.serverText({ type: 'started', pid: 2, pty: false, token: 1, offset: 0 });
  const s3 = await opening3;
  firstSock.serverClose(1006);
  await assert.rejects(s3.exit, (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE' && /could not resume/.test(err.message));
  assert.ok(again.length >= 2, `${again.length} attempts`);

  const plain = new FakeSocket();
  const opening4 = StreamSession.open(plain, { op: 'attach', pid: 2 }, undefined, { connect: connect2, reconnectMs: 10_000 });
  plain.serverOpen();
  plain.serverText({ type: 'started', pid: 2, pty: false });
  const s4 = await opening4;
  plain.serverClose(1000);
  assert.equal(await s4.exit, null);
});

async function waitUntil(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(ok(), 'condition not reached');
}
