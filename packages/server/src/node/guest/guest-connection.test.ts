import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { ForkdError } from '@forkd/protocol';
import { GuestConnection, unixDialer } from './guest-connection.js';
import { encodeFrame, encodeTlv, K, ProtocolError, T } from './guest-frames.js';
import { handlerFaults } from '../../shared/connection-guard.js';
import { hostileBytes } from '../../testing/fuzz-bytes.js';

/*
 * A hostile agent on a real Unix socket: whatever it sends after the HELLO,
 * the host's connection ends in a frame, a close or a typed error, never a
 * throw out of a socket listener.
 */
let dir = '';
let server: Server;
let send: Buffer = Buffer.alloc(0);

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forkd-guestconn-'));
  server = createServer((s) => {
    s.on('error', () => {});
    s.once('data', () => s.end(send));
  });
  await new Promise<void>((r) => server.listen(join(dir, 'agent.sock'), r));
});
after(async () => {
  server.close();
  await rm(dir, { recursive: true, force: true });
});

const hello = encodeFrame(T.HELLO_OK, encodeTlv([[K.VERSION, 3], [K.AGENT, 'hostile']]));
const stream = Buffer.concat([hello, encodeFrame(T.STDOUT, Buffer.from('out')), encodeFrame(T.EXIT, encodeTlv([[K.EXIT_CODE, 0]]))]);

/** Opens, handshakes and drains one connection; what it ended with. */
async function session(bytes: Buffer): Promise<string> {
  send = bytes;
  const conn = await GuestConnection.open(unixDialer(join(dir, 'agent.sock')), 3, 2000);
  try {
    await conn.handshake();
    for (let i = 0; ; i++) if ((await conn.next(2000)) === null) return `frames ${i}`;
  } catch (err) {
    if (err instanceof ForkdError) return err.code;
    if (err instanceof ProtocolError) return 'protocol';
    throw err;
  } finally {
    conn.close();
  }
}

test('fuzz: a hostile agent ends the connection with a typed error or a close; nothing escapes the socket listeners', async () => {
  assert.equal(await session(stream), 'frames 2');
  const faults = handlerFaults.get('guest');
  const seen = new Set<string>();
  await fc.assert(
    fc.asyncProperty(hostileBytes([stream], 512), async (b) => {
      seen.add(await session(b));
    }),
    { numRuns: 300 },
  );
  assert.equal(handlerFaults.get('guest'), faults, 'every bad byte was answered by the decoder, none by the guard');
  assert.ok(seen.has('INTERNAL') && seen.has('UNAVAILABLE'), [...seen].join(', '));
});
