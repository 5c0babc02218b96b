import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { CredentialInterceptor } from './credential-interceptor.js';
import { SandboxCas } from './sandbox-ca.js';

/*
 * The interceptor seam with the real thing but without the egress proxy: a
 * minimal harness terminates TLS with tlsContext() (as the proxy does when
 * terminates() says so), asks headers() for each request and answers with
 * what an upstream would have received. The client trusts only the
 * sandbox's CA certificate, as the sandbox does.
 */

const SB = 'sbx-aaaaaaaaaaaa';

async function harness(ic: CredentialInterceptor) {
  const seen: IncomingHttpHeaders[] = [];
  const upstream = createServer((req, res) => {
    seen.push(req.headers);
    res.end(JSON.stringify(req.headers));
  });
  // The "proxy" side: TLS terminated with the sandbox's context picked by SNI.
  const inner = createServer((req, res) => {
    const sni = (req.socket as TLSSocket).servername || 'none';
    const headers: Record<string, string> = {};
    for (const [n, v] of ic.headers(SB, { host: sni, port: 443, method: req.method ?? 'GET', path: req.url ?? '/', tls: true })) headers[n.toLowerCase()] = v;
    const up = httpRequest({ host: '127.0.0.1', port: (upstream.address() as AddressInfo).port, path: req.url, method: req.method, headers: { ...req.headers, ...headers } }, (r) => r.pipe(res));
    req.pipe(up);
  });
  const tls = createTlsServer({
    SNICallback: (name, cb) => {
      if (!ic.terminates(SB, name, 443)) return cb(new Error('not terminated'));
      ic.tlsContext(SB, name).then((ctx) => cb(null, ctx), (err: Error) => cb(err));
    },
  }, (s) => inner.emit('connection', s));
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => tls.listen(0, '127.0.0.1', r));
  return { seen, port: (tls.address() as AddressInfo).port, close: () => { tls.close(); upstream.close(); inner.close(); } };
}

function get(port: number, servername: string, ca: string, path = '/v1/x'): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port, servername, ca }, () => {
      s.write(`GET ${path} HTTP/1.1\r\nHost: ${servername}\r\nConnection: close\r\n\r\n`);
    });
    let out = '';
    s.on('data', (d: Buffer) => (out += d.toString()));
    s.on('end', () => resolve(out));
    s.on('error', reject);
  });
}

test('a TLS client trusting only the sandbox CA verifies the terminated connection and the upstream gets the injected header', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-sandbox-ca-'));
  const cas = new SandboxCas(join(dir, 'ca'));
  const ic = new CredentialInterceptor(cas);
  const h = await harness(ic);
  try {
    const ca = await cas.certificate(SB);
    assert.match(ca, /BEGIN CERTIFICATE/);
    assert.ok(!ca.includes('PRIVATE KEY'));
    assert.equal((await stat(join(dir, 'ca', SB))).mode & 0o777, 0o700);
    for (const f of await readdir(join(dir, 'ca', SB))) assert.equal((await stat(join(dir, 'ca', SB, f))).mode & 0o077, 0, `${f} is owner-only`);
    ic.set(SB, [{ grantId: 'grt-0000000000000001', secret: 'TOKEN', hosts: ['api.example.test'], headerName: 'Authorization', headerValue: 'Bearer v4lue' }]);
    const res = await get(h.port, 'api.example.test', ca);
    assert.match(res, /^HTTP\/1.1 200/);
    assert.equal(h.seen.at(-1)?.authorization, 'Bearer v4lue');
    // Another sandbox's CA (a fork's, say) is not trusted for this one's connections.
    const other = await cas.certificate('sbx-bbbbbbbbbbbb');
    await assert.rejects(get(h.port, 'api.example.test', other), /certificate|self.signed|unable/i);
    // Revoked: the proxy no longer terminates, so the client gets no certificate of ours.
    ic.set(SB, []);
    assert.equal(ic.terminates(SB, 'api.example.test', 443), false);
    assert.doesNotMatch(await get(h.port, 'api.example.test', ca).catch(() => ''), /200/);
    assert.equal(h.seen.length, 1, 'nothing more reached the upstream');
    await cas.remove(SB);
    assert.deepEqual((await readdir(join(dir, 'ca'))).sort(), ['sbx-bbbbbbbbbbbb']);
  } finally {
    h.close();
    await rm(dir, { recursive: true, force: true });
  }
});
