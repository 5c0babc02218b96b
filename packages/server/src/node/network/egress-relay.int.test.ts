import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { HANDOFF_BYTES, relay } from './egress-relay.js';

/** An upstream that answers each connection with the sha256 of what it received, after `size` random bytes of its own (their hash first). */
let upstream: Server;
let proxy: Server;
let relays = 0;
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

before(async () => {
  upstream = createServer((s) => {
    const got: Buffer[] = [];
    s.once('data', (first: Buffer) => {
      const size = first.readUInt32BE(0);
      const body = randomBytes(size);
      s.write(`${sha(body)}\n`);
      s.write(body);
      got.push(first.subarray(4));
      s.on('data', (d: Buffer) => got.push(d));
      s.on('end', () => s.end(`\n${sha(Buffer.concat(got))}`));
    });
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  proxy = createServer({ allowHalfOpen: true }, (s) => {
    const up = connect({ port: (upstream.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true }, () => relay(s, up, () => relays++));
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
});
after(() => {
  proxy.close();
  upstream.close();
});

async function exchange(down: number, upBytes: number): Promise<{ ok: boolean; sentOk: boolean }> {
  const c: Socket = connect({ port: (proxy.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
  const sent = randomBytes(upBytes);
  const hdr = Buffer.alloc(4);
  hdr.writeUInt32BE(down);
  c.write(Buffer.concat([hdr, sent]));
  c.end();
  const chunks: Buffer[] = [];
  c.on('data', (d: Buffer) => chunks.push(d));
  await new Promise((r) => c.on('close', r));
  const all = Buffer.concat(chunks);
  const nl = all.indexOf('\n');
  const tail = all.lastIndexOf('\n');
  const body = all.subarray(nl + 1, tail);
  return { ok: all.subarray(0, nl).toString() === sha(body) && body.length === down, sentOk: all.subarray(tail + 1).toString() === sha(sent) };
}

test('relay: small exchanges in Node, big ones handed to forkd-splice; every byte, both ways, half-close passed on', async () => {
  assert.deepEqual(await exchange(1000, 1000), { ok: true, sentOk: true });
  assert.deepEqual(await exchange(8 * HANDOFF_BYTES, 3 * HANDOFF_BYTES), { ok: true, sentOk: true });
  assert.deepEqual(await exchange(3 * HANDOFF_BYTES, 10), { ok: true, sentOk: true });
  const t0 = Date.now();
  while (relays < 3 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
  assert.equal(relays, 3, 'done once per connection');
});
