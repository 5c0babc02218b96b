import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type AddressInfo } from 'node:net';
import { connect } from 'node:tls';
import { readSni } from './tls-sni.js';

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

test('SNI: the name of a real ClientHello; need more for any prefix; none without one or for non-TLS', async () => {
  const hello = await clientHello('a.test');
  assert.deepEqual(readSni(hello), { kind: 'name', name: 'a.test' });
  for (const n of [0, 3, 5, 40, hello.length - 1]) assert.equal(readSni(hello.subarray(0, n)).kind, 'need', `prefix ${n}`);
  assert.equal(readSni(await clientHello(undefined)).kind, 'none');
  assert.equal(readSni(Buffer.from('GET / HTTP/1.1\r\n')).kind, 'none');
});
