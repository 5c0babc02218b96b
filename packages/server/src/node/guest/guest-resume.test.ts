import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import type { GuestClient } from './guest-client.js';
import { AGENT, startLocalAgent, type LocalAgent } from '../../testing/local-agent.js';
import { GuestConnection, unixDialer } from './guest-connection.js';
import { FORKD_GUEST_PROTOCOL, K, T, Tlv } from './guest-frames.js';

/** The real agent, outside a container (`--socket`), spoken to by the host's real client. */
describe('guest protocol 2: resumable process streams', { skip: !existsSync(AGENT) && 'guest agent not built' }, () => {
  let guest: GuestClient;
  const sock = () => local.sock;

  let local: LocalAgent;

  before(async () => {
    local = await startLocalAgent('forkd-guest-');
    guest = local.guest;
  });
  after(() => local.stop());

  test('a stream let go of mid-output resumes at its offset: every byte once, in order', async () => {
    let out = '';
    const first = await guest.spawn({ argv: ['/bin/sh', '-c', 'for i in $(seq 1 3000); do echo line-$i; done; sleep 0.2; echo end'] }, { onStdout: (d) => void (out += d.toString()) });
    assert.ok(first.token !== undefined && first.resumable);
    await sleep(20);
    const release = await guest.quiesce();
    assert.equal(await first.done, null);
    assert.equal(first.reason, 'quiesce');
    release();
    const again = await guest.attach({ pid: first.pid }, { onStdout: (d) => void (out += d.toString()) }, { token: first.token!, offset: first.offset });
    assert.equal(again.startOffset, first.offset);
    const exit = await again.done;
    assert.deepEqual(exit, { exitCode: 0, signal: 0 });
    const expected = Array.from({ length: 3000 }, (_, i) => `line-${i + 1}\n`).join('') + 'end\n';
    assert.equal(out, expected);
  });

  test('DETACHED counts the stdin the process took; the exit stays until it is acknowledged', async () => {
    let out = '';
    const p = await guest.spawn({ argv: ['cat'], stdin: true }, { onStdout: (d) => void (out += d.toString()) });
    await p.write(Buffer.from('abc\n'));
    const release = await guest.quiesce();
    assert.equal(p.stdinAccepted, 4);
    release();
    const q = await guest.attach({ pid: p.pid }, { onStdout: (d) => void (out += d.toString()) }, { token: p.token!, offset: p.offset });
    await q.write(Buffer.from('def\n'));
    q.closeStdin();
    assert.deepEqual(await q.done, { exitCode: 0, signal: 0 });
    assert.equal(out, 'abc\ndef\n');
    // Acknowledged: the exited entry is gone.
    await sleep(50);
    assert.ok(!(await guest.listProcesses()).some((x) => x.pid === p.pid));
  });

  test('an unacknowledged exit can be fetched again; a wrong token is ESRCH; an offset past the end starts at the end', async () => {
    const conn = await GuestConnection.open(unixDialer(sock()));
    conn.send(T.SPAWN, [[K.ARG, '/bin/echo'], [K.ARG, 'hello']]);
    await conn.handshake();
    const started = new Tlv((await conn.expect(T.STARTED)).payload);
    const pid = started.reqInt(K.PID);
    const token = started.reqInt(K.TOKEN);
    const start = started.reqInt(K.OFFSET);
    assert.equal((await conn.expect(T.STDOUT)).payload.toString(), 'hello\n');
    await conn.expect(T.EXIT);
    conn.close(); // no ACK: as if a snapshot cut the connection
    await sleep(50);
    assert.ok((await guest.listProcesses()).some((x) => x.pid === pid && !x.running), 'the exit is kept');
    await assert.rejects(guest.attach({ pid }, {}, { token: token + 1, offset: start }), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    let out = '';
    const past = await guest.attach({ pid }, { onStdout: (d) => void (out += d.toString()) }, { token, offset: start + 1_000_000 });
    assert.equal(past.startOffset, start + 5 + 6);
    assert.deepEqual(await past.done, { exitCode: 0, signal: 0 });
    assert.equal(out, '');
  });

  test('DETACH in the middle of fast output (a frame half written): the rest of that frame, then DETACHED, never inside it', async () => {
    // Zeros: a DETACHED landing inside a frame of them reads as a frame length of 0 (a protocol violation).
    const total = 8 * 2 ** 20;
    for (let round = 0; round < 8; round++) {
      let received = 0;
      const count = { onStdout: (d: Buffer) => void (received += d.length) };
      const p = await guest.spawn({ argv: ['head', '-c', String(total), '/dev/zero'] }, count);
      await until(() => received >= (round + 1) * 256 * 1024);
      const release = await guest.quiesce();
      assert.equal(await p.done, null, 'let go of, not failed');
      assert.equal(p.reason, 'quiesce');
      release();
      const again = await guest.attach({ pid: p.pid }, count, { token: p.token!, offset: p.offset });
      assert.deepEqual(await again.done, { exitCode: 0, signal: 0 });
      assert.equal(received, total);
    }
  });

  test('protocols 1 and 2 are still spoken', async () => {
    for (const v of [1, 2]) {
      const conn = await GuestConnection.open(unixDialer(sock()), v);
      conn.send(T.INFO);
      await conn.handshake();
      assert.equal(conn.version, v);
      // INFO names the newest version the agent speaks.
      assert.equal(new Tlv((await conn.expect(T.OK)).payload).reqInt(K.VERSION), FORKD_GUEST_PROTOCOL);
      conn.close();
    }
  });
});

/**
 * How long a detached stream's output is held (back-pressure, not dropped): until the host is back (its
 * next connection), however long that takes (a daemon stopped for an upgrade), then HOLD_MS for it to
 * re-attach. The agent here waits 300 ms, not 30 s, once the host is back (--hold-ms).
 */
describe('guest protocol 2: a detached stream is held until its host is back', { skip: !existsSync(AGENT) && 'guest agent not built' }, () => {
  let local: LocalAgent;
  before(async () => {
    local = await startLocalAgent('forkd-guest-hold-', ['--hold-ms', '300']);
  });
  after(() => local.stop());

  const BYTES = 3 * 2 ** 20; // three times the ring
  /** A writer of BYTES, let go of (DETACH) once it has printed, with `meanwhile` run before it is attached again. */
  async function detachedWriter(meanwhile: () => Promise<unknown>): Promise<{ received: number; dropped: number }> {
    let received = 0;
    let dropped = 0;
    const count = { onStdout: (d: Buffer) => void (received += d.length), onDropped: (n: number) => void (dropped += n) };
    const p = await local.guest.spawn({ argv: ['head', '-c', String(BYTES), '/dev/zero'] }, count);
    await until(() => received > 0);
    const release = await local.guest.quiesce();
    release();
    await meanwhile();
    const again = await local.guest.attach({ pid: p.pid }, count, { token: p.token!, offset: p.offset });
    assert.deepEqual(await again.done, { exitCode: 0, signal: 0 });
    return { received, dropped };
  }

  test('no host for three times the hold: nothing dropped, every byte arrives', async () => {
    assert.deepEqual(await detachedWriter(() => sleep(1000)), { received: BYTES, dropped: 0 });
  });

  test('a host that is back and does not re-attach within the hold: the output past the ring is dropped, and said to be', async () => {
    const r = await detachedWriter(async () => {
      await local.guest.listProcesses();
      await sleep(1000);
    });
    assert.ok(r.dropped > 0 && r.received < BYTES, JSON.stringify(r));
  });
});

/** Waits for `cond`, failing after 10 s (a stream that broke must fail its test, not hang the file). */
async function until(cond: () => boolean): Promise<void> {
  for (const t0 = Date.now(); !cond(); await sleep(1)) if (Date.now() - t0 > 10_000) throw new Error('not within 10 s');
}
