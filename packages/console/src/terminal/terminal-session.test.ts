import { test } from 'node:test';
import assert from 'node:assert/strict';
import { TerminalSession, type SocketLike, type TerminalSink } from './terminal-session.js';

/** A socket the test drives: what the session sent, and the server's side as calls. */
class FakeSocket implements SocketLike {
  binaryType = 'blob';
  readyState = 0;
  sent: Array<string | Uint8Array> = [];
  onopen: ((ev: never) => void) | null = null;
  onmessage: ((ev: never) => void) | null = null;
  onclose: ((ev: never) => void) | null = null;
  onerror: ((ev: never) => void) | null = null;

  send(data: string | Uint8Array): void {
    this.sent.push(data);
  }
  close(): void {
    this.drop(1000);
  }
  open(): void {
    this.readyState = 1;
    (this.onopen as ((ev: unknown) => void) | null)?.({});
  }
  message(data: unknown): void {
    (this.onmessage as ((ev: { data: unknown }) => void) | null)?.({ data });
  }
  drop(code = 1006): void {
    if (this.readyState === 3) return;
    this.readyState = 3;
    (this.onclose as ((ev: { code: number; reason: string }) => void) | null)?.({ code, reason: '' });
  }
  get json(): unknown[] {
    return this.sent.filter((s): s is string => typeof s === 'string').map((s) => JSON.parse(s) as unknown);
  }
}

function harness() {
  const sockets: FakeSocket[] = [];
  const out: string[] = [];
  const notes: string[] = [];
  let ended = 0;
  const sink: TerminalSink = { output: (b) => out.push(new TextDecoder().decode(b)), note: (t) => notes.push(t), ended: () => void ended++ };
  const session = new TerminalSession(() => {
    const s = new FakeSocket();
    sockets.push(s);
    return s;
  }, { cmd: ['bash', '-l'], pty: true, cols: 100, rows: 30 }, sink);
  return { session, sockets, out, notes, ended: () => ended };
}

const frame = (stream: number, text: string) => {
  const t = new TextEncoder().encode(text);
  const b = new Uint8Array(t.length + 1);
  b[0] = stream;
  b.set(t, 1);
  return b.buffer;
};

test('opens with a spawn request, writes stdin as binary and resizes as control messages once started', () => {
  const { session, sockets, out } = harness();
  const ws = sockets[0]!;
  ws.open();
  assert.deepEqual(ws.json[0], { op: 'spawn', spawn: { cmd: ['bash', '-l'], pty: true, cols: 100, rows: 30 } });
  session.write('ignored before start');
  ws.message(JSON.stringify({ type: 'started', pid: 7, pty: true }));
  session.write('ls\r');
  session.resize(120, 40);
  assert.deepEqual(ws.sent.slice(1).map((s) => (typeof s === 'string' ? JSON.parse(s) : new TextDecoder().decode(s))), ['ls\r', { type: 'resize', cols: 120, rows: 40 }]);
  ws.message(frame(1, 'hello'));
  ws.message(frame(2, ' err'));
  assert.equal(out.join(''), 'hello err');
});

test('a dropped connection re-attaches to the same pid and says so; the size is sent again', async () => {
  const { session, sockets, notes } = harness();
  sockets[0]!.open();
  sockets[0]!.message(JSON.stringify({ type: 'started', pid: 42, pty: true }));
  session.resize(90, 20);
  sockets[0]!.drop(1006);
  assert.match(notes.join('|'), /reconnecting/);
  await new Promise((r) => setTimeout(r, 600));
  const again = sockets[1]!;
  again.open();
  assert.deepEqual(again.json[0], { op: 'attach', pid: 42 });
  again.message(JSON.stringify({ type: 'started', pid: 42, pty: true }));
  assert.deepEqual(again.json[1], { type: 'resize', cols: 90, rows: 20 });
  assert.match(notes.at(-1)!, /reconnected/);
  session.close();
});

test('a shell held for approval says so, then starts once approved', () => {
  const { session, sockets, notes } = harness();
  const ws = sockets[0]!;
  ws.open();
  ws.message(JSON.stringify({ type: 'waiting', approvalId: 'apr-7', rule: 'shells', expiresAt: '2030-01-01T00:00:00Z' }));
  assert.match(notes.at(-1)!, /waiting for approval apr-7 \(rule shells\)/);
  ws.message(JSON.stringify({ type: 'started', pid: 11, pty: true }));
  assert.equal(session.pid, 11);
});

test('a stream that can resume re-attaches from its position (started offset + 5 + bytes per output, position events), after a daemon restart (1012)', async () => {
  const { session, sockets, notes, out } = harness();
  sockets[0]!.open();
  sockets[0]!.message(JSON.stringify({ type: 'started', pid: 8, pty: true, token: 77, offset: 100 }));
  sockets[0]!.message(frame(1, 'hello'));
  sockets[0]!.message(JSON.stringify({ type: 'position', offset: 500 }));
  sockets[0]!.message(frame(1, 'abc'));
  sockets[0]!.drop(1012);
  assert.match(notes.at(-1)!, /forkd is restarting; reconnecting/);
  await new Promise((r) => setTimeout(r, 400));
  // The first try is refused (forkd still down): the next one goes on from the same point.
  sockets[1]!.drop(1006);
  await new Promise((r) => setTimeout(r, 700));
  const again = sockets[2]!;
  again.open();
  assert.deepEqual(again.json[0], { op: 'attach', pid: 8, resume: { token: 77, offset: 508 } });
  again.message(JSON.stringify({ type: 'started', pid: 8, pty: true, token: 77, offset: 508 }));
  again.message(frame(1, 'more'));
  assert.equal(out.join(''), 'helloabcmore');
  assert.match(notes.at(-1)!, /reconnected/);
  session.close();
});

test('a rewind under the shell is said; a rewind to before it ends the session without a reconnect', () => {
  const { sockets, notes, ended } = harness();
  const ws = sockets[0]!;
  ws.open();
  ws.message(JSON.stringify({ type: 'started', pid: 5, pty: true }));
  ws.message(JSON.stringify({ type: 'rewound' }));
  assert.match(notes.at(-1)!, /rewound; this shell goes on/);
  ws.message(JSON.stringify({ type: 'error', error: { code: 'REWOUND', message: 'gone' } }));
  ws.drop(1011);
  assert.match(notes.at(-1)!, /rewound to a state before this shell started/);
  assert.equal(ended(), 1);
  assert.equal(sockets.length, 1, 'no reconnect');
});

test('an exit ends the session; a refused open ends it with the reason; close() detaches without a reconnect', () => {
  const a = harness();
  a.sockets[0]!.open();
  a.sockets[0]!.message(JSON.stringify({ type: 'started', pid: 5, pty: true }));
  a.sockets[0]!.message(JSON.stringify({ type: 'exit', exitCode: 3, signal: 0, oomKilled: false }));
  a.sockets[0]!.drop(1000);
  assert.match(a.notes.at(-1)!, /exited \(code 3\)/);
  assert.equal(a.ended(), 1);
  const b = harness();
  b.sockets[0]!.open();
  b.sockets[0]!.message(JSON.stringify({ type: 'error', error: { code: 'NOT_FOUND', message: 'sandbox sbx-x not found' } }));
  b.sockets[0]!.drop(1011);
  assert.match(b.notes.at(-1)!, /NOT_FOUND: sandbox sbx-x not found/);
  assert.equal(b.sockets.length, 1);
  const c = harness();
  c.sockets[0]!.open();
  c.sockets[0]!.message(JSON.stringify({ type: 'started', pid: 9, pty: true }));
  c.session.close();
  assert.equal(c.sockets.length, 1);
  assert.equal(c.ended(), 0);
});
