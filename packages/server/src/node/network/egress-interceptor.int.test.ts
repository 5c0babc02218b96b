import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import { FETCH_PY, FETCH_TLS_PY, makeTestCa, startTestInternet, type TestInternet } from '../../testing/test-internet.js';
import type { EgressInterceptor, OutboundRequest } from './egress-interceptor.js';

const A = '198.51.100.2';

/** From inside: two requests on one kept-alive connection (the second a POST of 100 kB, naming argv[4]); both bodies. */
const KEEPALIVE_PY = `import sys,ssl,http.client
c=http.client.HTTPSConnection(sys.argv[1],context=ssl.create_default_context(cadata=sys.argv[2]),timeout=5) if sys.argv[3]=='tls' else http.client.HTTPConnection(sys.argv[1],timeout=5)
try:
  c.request('GET','/');r=c.getresponse();print(r.read().decode())
  c.request('POST','/up',body=b'x'*100000,headers={'Host':sys.argv[4]});r=c.getresponse();print(r.status,r.read().decode().strip())
except Exception as e: print('ERR',type(e).__name__)`;

describe('egress proxy with an interceptor: TLS terminated with its certificate, its headers on every request', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let internet: TestInternet;
  let dir = '';
  let sandboxCa = '';
  let ctx: SecureContext;
  const seen: OutboundRequest[] = [];

  const interceptor: EgressInterceptor = {
    terminates: (_id, host) => host === 'a.test',
    tlsContext: async () => ctx,
    headers: (sandboxId, req) => {
      seen.push(req);
      return [['X-Credential', `secret-of-${sandboxId}`]];
    },
  };

  before(async () => {
    internet = await startTestInternet();
    dir = await mkdtemp(join(tmpdir(), 'forkd-icpt-'));
    // The sandbox's CA (the other part makes one per sandbox): a certificate for a.test it signed.
    sandboxCa = await makeTestCa(dir, ['a.test'], []);
    ctx = createSecureContext({ key: await readFile(join(dir, 'server.key')), cert: await readFile(join(dir, 'server.pem')) });
    await writeFile(join(dir, 'internet-ca.pem'), internet.caPem);
    process.env.FORKD_DNS_UPSTREAM = internet.dns;
    process.env.FORKD_EGRESS_EXTRA_CA = join(dir, 'internet-ca.pem');
    node = await createTestNode({ egressInterceptor: interceptor });
  });

  after(async () => {
    delete process.env.FORKD_EGRESS_EXTRA_CA;
    await node?.dispose();
    await internet?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('terminated TLS and plain HTTP get the headers on each kept-alive request; a request cannot switch hosts; other TLS and HTTP are spliced', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', denyOut: ['private.test'] } });
    const py = async (...a: string[]) => (await run(node.manager, s.id, ['python3', '-c', ...a])).stdout.trim();
    const cred = `secret-of-${s.id}`;
    // The sandbox trusts the sandbox CA only: the certificate it sees is the interceptor's.
    assert.equal(await py(FETCH_TLS_PY, 'https://a.test/', sandboxCa), `tls hello from ${A} with ${cred}`);
    assert.equal(await py(KEEPALIVE_PY, 'a.test', sandboxCa, 'tls', 'a.test'), `tls hello from ${A} with ${cred}\n200 tls hello from ${A} with ${cred} got 100000`);
    assert.match(await py(KEEPALIVE_PY, 'a.test', sandboxCa, 'tls', 'x.sub.test'), /\n421 /, 'another Host over a terminated a.test');
    assert.equal(await py(KEEPALIVE_PY, 'a.test', '', 'plain', 'a.test'), `hello from ${A} with ${cred}\n200 hello from ${A} with ${cred} got 100000`);
    assert.match(await py(KEEPALIVE_PY, 'a.test', '', 'plain', 'private.test'), /\n403 /, 'a denied Host on a kept-alive connection');
    // Where no credential may apply (terminates() says no for the name), plain HTTP is spliced: no headers.
    assert.equal(await py(FETCH_PY, 'http://x.sub.test/'), 'hello from 198.51.100.3');
    // Not terminated: the real certificate (the sandbox CA does not verify it), no headers added.
    assert.match(await py(FETCH_TLS_PY, 'https://x.sub.test/', sandboxCa), /^ERR/);
    assert.equal(await py(FETCH_TLS_PY, 'https://x.sub.test/', internet.caPem), 'tls hello from 198.51.100.3');
    assert.ok(seen.some((r) => r.host === 'a.test' && r.tls && r.method === 'POST' && r.path === '/up'));
    assert.ok(seen.some((r) => r.host === 'a.test' && !r.tls && r.port === 80));
    await node.manager.delete(s.id);
  });
});
