import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import fc from 'fast-check';
import { readSni, type SniResult } from './tls-sni.js';
import { hostileBytes, prefixes } from '../../testing/fuzz-bytes.js';

/** The first bytes a real TLS client (Node's) sends, with `servername` or none. */
async function clientHello(servername: string | undefined): Promise<Buffer> {
  const got: Buffer[] = [];
  const srv = createServer((s) => s.on('data', (d: Buffer) => got.push(d)));
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const c = connect({ host: '127.0.0.1', port: (srv.address() as AddressInfo).port, ...(servername ? { servername } : {}), rejectUnauthorized: false });
  c.on('error', () => {});
  await new Promise((r) => setTimeout(r, 200));
  c.destroy();
  srv.close();
  return Buffer.concat(got);
}

/** The same hello with its handshake message split over two records at `at` (as long hellos are). */
function splitRecords(hello: Buffer, at: number): Buffer {
  const hs = hello.subarray(5);
  const rec = (body: Buffer) => Buffer.concat([Buffer.from([0x16, 0x03, 0x01, body.length >> 8, body.length & 0xff]), body]);
  return Buffer.concat([rec(hs.subarray(0, at)), rec(hs.subarray(at))]);
}

const LONG = `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.example`;
let named: Buffer;
let long: Buffer;
let unnamed: Buffer;
let split: Buffer;
before(async () => {
  [named, long, unnamed] = await Promise.all([clientHello('a.test'), clientHello(LONG), clientHello(undefined)]);
  split = splitRecords(named, 40);
});

/** Records that look like TLS up to where they lie: a handshake header with any length, then few or many bytes. */
const tlsShaped = fc
  .tuple(fc.constantFrom(0x16), fc.constantFrom(0x03, 0x01, 0x00), fc.nat(4), fc.oneof(fc.nat(12), fc.nat(0xffff)), fc.constantFrom(0x01, 0x02), fc.oneof(fc.nat(12), fc.nat(0xffffff)), fc.uint8Array({ maxLength: 96 }))
  .map(([t, maj, min, recLen, hsType, hsLen, rest]) => Buffer.concat([Buffer.from([t, maj, min, recLen >> 8, recLen & 0xff, hsType, hsLen >> 16, (hsLen >> 8) & 0xff, hsLen & 0xff]), Buffer.from(rest)]))
  .chain((b) => fc.nat(b.length).map((n) => b.subarray(0, n)));

const isResult = (r: SniResult) => r.kind === 'need' || r.kind === 'none' || (r.kind === 'name' && /^[a-z0-9_.-]{1,253}$/.test(r.name));

test('the name of a real ClientHello, in one record or split over two; none without one or for non-TLS', () => {
  assert.deepEqual(readSni(named), { kind: 'name', name: 'a.test' });
  assert.deepEqual(readSni(long), { kind: 'name', name: LONG });
  assert.deepEqual(readSni(split), { kind: 'name', name: 'a.test' });
  assert.equal(readSni(unnamed).kind, 'none');
  assert.equal(readSni(Buffer.from('GET / HTTP/1.1\r\n')).kind, 'none');
});

test('the attack of issue 23 (a record of length 0 declaring a hello) is none, as is any empty or lying record', () => {
  assert.equal(readSni(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x00, 0x01])).kind, 'none');
  assert.equal(readSni(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x05, 0x01])).kind, 'need', 'a hello still arriving');
  assert.equal(readSni(Buffer.from([0x16, 0x03, 0x01, 0xff, 0xff, 0x01, 0xff, 0xff, 0xff])).kind, 'none', 'longer than any record');
  assert.equal(readSni(Buffer.from([0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x10, 0x17])).kind, 'none', 'a record that ends the handshake records early');
});

test('every prefix of a real hello is need until the name has arrived, then the name', () => {
  for (const [hello, name] of [[named, 'a.test'], [long, LONG], [split, 'a.test']] as const) {
    const nameEnd = hello.indexOf(name) + name.length;
    for (const p of prefixes(hello)) assert.deepEqual(readSni(p), p.length < nameEnd ? { kind: 'need' } : { kind: 'name', name }, `prefix ${p.length}`);
  }
  for (const p of prefixes(unnamed)) assert.equal(readSni(p).kind, p.length < unnamed.length ? 'need' : 'none', `prefix ${p.length}`);
});

test('fuzz: truncated, mutated, oversized and random hellos never throw and give a well-formed result', () => {
  fc.assert(
    fc.property(fc.oneof(hostileBytes([named, long, unnamed, split]), tlsShaped), (b) => isResult(readSni(b))),
    { numRuns: 5000 },
  );
});

test('fuzz: a decision on a prefix is final (more bytes never turn a name or none into something else)', () => {
  fc.assert(
    fc.property(fc.oneof(hostileBytes([named, split, unnamed]), tlsShaped), fc.nat(), (b, cut) => {
      const early = readSni(b.subarray(0, cut % (b.length + 1)));
      if (early.kind !== 'need') assert.deepEqual(readSni(b), early);
    }),
    { numRuns: 3000 },
  );
});
