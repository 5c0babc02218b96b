import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, createServer, type AddressInfo, type Server } from 'node:net';
import fc from 'fast-check';
import { EgressHttpForwarder } from './egress-http-forwarder.js';
import type { EgressSandbox } from './egress-policy.js';
import { replyHead } from './upstream-reply.js';
import { handlerFaults } from '../../shared/connection-guard.js';
import { hostileBytes } from '../../testing/fuzz-bytes.js';

/*
 * The forwarder against an upstream that answers whatever the test says,
 * on loopback: the sandbox's side is a real socket handed to serveHttp, the
 * upstream's reply goes through Node's real HTTP client parser and back out
 * through the forwarder's writeHead.
 */
let reply: Buffer = Buffer.alloc(0);
let upstream: Server;
let front: Server;
let forwarder: EgressHttpForwarder;
const sb = { key: 'k', sandboxId: 'sb-test' } as EgressSandbox;

const port = (s: Server) => (s.address() as AddressInfo).port;
const listen = (s: Server) => new Promise<void>((r) => s.listen(0, '127.0.0.1', r));

before(async () => {
  upstream = createServer((s) => {
    s.on('error', () => {});
    let got = '';
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1');
      if (got.includes('\r\n\r\n')) s.end(reply);
    });
  });
  await listen(upstream);
  forwarder = new EgressHttpForwarder({ interceptor: undefined, extraCa: undefined, route: async () => ({ addr: '127.0.0.1' }), ports: { http: port(upstream), tls: 1 } });
  // As the proxy's listener: half-open, so a client that ends its side still gets the answer.
  front = createServer({ allowHalfOpen: true }, (s) => {
    s.on('error', () => {});
    forwarder.serveHttp(sb, s, Buffer.alloc(0));
  });
  await listen(front);
});
after(() => {
  forwarder.close();
  upstream.close();
  front.close();
});

/** One request through the forwarder; what the sandbox got back (latin1), '' if the connection was just closed. */
function exchange(upstreamReply: Buffer): Promise<string> {
  reply = upstreamReply;
  return new Promise((resolve, reject) => {
    const c = connect(port(front), '127.0.0.1');
    const got: Buffer[] = [];
    const timer = setTimeout(() => (c.destroy(), reject(new Error(`no end for ${JSON.stringify(upstreamReply.toString('latin1').slice(0, 80))}`))), 5000);
    c.on('data', (d: Buffer) => got.push(d));
    c.on('error', () => {});
    c.on('close', () => (clearTimeout(timer), resolve(Buffer.concat(got).toString('latin1'))));
    // Not half-closed: the forwarder's HTTP server aborts a request whose client ended its side.
    c.write('GET /x HTTP/1.1\r\nHost: up.test\r\nConnection: close\r\n\r\n');
  });
}

const status = (got: string) => /^HTTP\/1\.1 (\d{3}) /.exec(got)?.[1];

test('a good reply is forwarded; status 42, a bad reason or header, or no status line is a 502, never a throw', async () => {
  assert.match(await exchange(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nX-Up: 1\r\n\r\nok')), /^HTTP\/1\.1 200 OK\r\n[^]*x-up: 1\r\n[^]*\r\n\r\nok$/i);
  for (const bad of ['HTTP/1.1 042 Odd\r\nContent-Length: 0\r\n\r\n', 'HTTP/1.1 099 Odd\r\n\r\n', 'HTTP/1.1 600 Odd\r\n\r\n', 'nonsense\r\n\r\n', 'HTTP/1.1 200 OK\r\nX: a\x00b\r\n\r\n', `HTTP/1.1 200 OK\r\nX: ${'y'.repeat(70_000)}\r\n\r\n`]) {
    assert.equal(status(await exchange(Buffer.from(bad, 'latin1'))), '502', JSON.stringify(bad.slice(0, 40)));
  }
});

test('the reply check: a status outside 200-599 or a field writeHead would refuse is not ok', () => {
  assert.equal(replyHead(42, 'x', {}).ok, false);
  assert.equal(replyHead(200, 'OK', { 'x\u0100': 'a' }).ok, false);
  assert.equal(replyHead(200, 'OK', { x: 'a\rb' }).ok, false);
  assert.deepEqual(replyHead(200, 'bad\u0001reason', { 'set-cookie': ['a=1', 'b=2'], connection: 'close' }), { ok: true, status: 200, message: undefined, headers: { 'set-cookie': ['a=1', 'b=2'] } });
});

test('fuzz: mutated, truncated and random upstream replies: the sandbox gets a reply or a close, nothing throws', async () => {
  const valid = [
    'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello',
    'HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n',
    'HTTP/1.0 302 Found\r\nLocation: http://up.test/y\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\n\r\n',
  ].map((s) => Buffer.from(s));
  const shaped = fc
    .tuple(fc.integer({ min: 0, max: 999 }), fc.uint8Array({ maxLength: 12 }), fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 8 }), fc.uint8Array({ maxLength: 24 })), { maxLength: 4 }))
    .map(([code, reason, fields]) => Buffer.concat([Buffer.from(`HTTP/1.1 ${String(code).padStart(3, '0')} `), Buffer.from(reason), ...fields.flatMap(([k, v]) => [Buffer.from('\r\n'), Buffer.from(k), Buffer.from(': '), Buffer.from(v)]), Buffer.from('\r\nContent-Length: 0\r\n\r\n')]));
  const before = handlerFaults.get('egress-forwarder');
  const seen = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(fc.oneof(hostileBytes(valid, 512), shaped), async (b) => {
      const got = await exchange(b);
      const code = got === '' ? 'closed' : status(got);
      assert.ok(code !== undefined, JSON.stringify(got.slice(0, 60)));
      seen.set(code, (seen.get(code) ?? 0) + 1);
    }),
    { numRuns: 300 },
  );
  // The run reached both sides of the check: replies forwarded and replies refused.
  assert.ok((seen.get('502') ?? 0) > 10 && [...seen.keys()].some((k) => k !== '502' && k !== 'closed'), JSON.stringify([...seen]));
  assert.equal(handlerFaults.get('egress-forwarder'), before, 'every bad reply was answered by the check, none by the guard');
});
