import { createHash, randomBytes } from 'node:crypto';
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { HANDOFF_BYTES, relay } from './egress-relay.js';
import { OwnerSlots } from './owner-slots.js';

/** An upstream that answers each connection with the sha256 of what it received, after `size` random bytes of its own (their hash first). */
let upstream: Server;
let proxy: Server;
/** Echoes every byte back: request/response exchanges on one kept-alive connection. */
let echo: Server;
let echoProxy: Server;
let relays = 0;
let slots = new OwnerSlots({ total: 8, perOwner: 8 });
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
    const up = connect({ port: (upstream.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true }, () => relay(s, up, () => relays++, { slots, owner: 'test' }));
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  echo = createServer((s) => s.pipe(s));
  await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
  echoProxy = createServer({ allowHalfOpen: true }, (s) => {
    const up = connect({ port: (echo.address() as AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true }, () => relay(s, up, () => {}, { slots, owner: 'test' }));
  });
  await new Promise<void>((r) => echoProxy.listen(0, '127.0.0.1', r));
});
after(() => {
  proxy.close();
  upstream.close();
  echoProxy.close();
  echo.close();
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

/** Sends `bytes` and waits until as many came back; milliseconds taken. */
async function roundTrip(c: Socket, bytes: number): Promise<number> {
  const t0 = performance.now();
  let got = 0;
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      got += d.length;
      if (got < bytes) return;
      c.off('data', onData);
      resolve();
    };
    c.on('data', onData);
    c.once('error', reject);
    c.write(randomBytes(bytes));
  });
  return performance.now() - t0;
}

test('relay: a spliced connection answers small exchanges at once (no write corked until more data comes)', async () => {
  const c = connect({ port: (echoProxy.address() as AddressInfo).port, host: '127.0.0.1', noDelay: true });
  await new Promise((r) => c.once('connect', r));
  await roundTrip(c, 2 * HANDOFF_BYTES);
  const t0 = Date.now();
  while (slots.inUse === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 10));
  assert.equal(slots.inUse, 1, 'handed to forkd-splice');
  // Corked, each reply's bytes waited for TCP's probe timer: ~200 ms a round trip, against well under 1 ms.
  const times: number[] = [];
  for (let i = 0; i < 5; i++) times.push(await roundTrip(c, 100));
  assert.ok(Math.max(...times) < 100, `round trips after the handoff took ${times.map((t) => t.toFixed(1)).join(', ')} ms`);
  c.destroy();
});

test('relay: with no splice slot free a connection stays in Node, whole; the slot comes back when a connection ends', async () => {
  // The slots' own bounds: owner-slots.test.ts.
  slots = new OwnerSlots({ total: 2, perOwner: 1 });
  const held = slots.take('test');
  assert.ok(held);
  const before = relays;
  const declined = slots.declined;
  const results = await Promise.all([exchange(4 * HANDOFF_BYTES, HANDOFF_BYTES), exchange(4 * HANDOFF_BYTES, 10)]);
  assert.deepEqual(results, [{ ok: true, sentOk: true }, { ok: true, sentOk: true }]);
  assert.equal(slots.declined, declined + 2, 'both stayed in Node');
  held();
  assert.deepEqual(await exchange(4 * HANDOFF_BYTES, 10), { ok: true, sentOk: true });
  assert.equal(slots.declined, declined + 2, 'the freed slot was taken');
  const t0 = Date.now();
  while ((relays < before + 3 || slots.inUse > 0) && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
  assert.equal(slots.inUse, 0);
  assert.equal(relays, before + 3);
});
