import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { exec } from '../../shared/exec.js';
import { run } from '../../testing/helpers.js';
import { FETCH_PY, FETCH_TLS_PY, startTestInternet, type TestInternet } from '../../testing/test-internet.js';
import { GATEWAY_IP } from './egress-nft.js';

const [A, B] = ['198.51.100.2', '198.51.100.3'];

/** From inside: the rcode (or ERR) of an A query for argv[2] sent to argv[1]:53 over UDP, and the first address. */
const DIG_PY = `import sys,socket,struct,random
q=struct.pack('>HHHHHH',random.randint(0,65535),0x0100,1,0,0,0)+b''.join(bytes([len(l)])+l.encode() for l in sys.argv[2].split('.'))+b'\\0\\0\\1\\0\\1'
s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM);s.settimeout(3)
try:
  s.sendto(q,(sys.argv[1],53));r=s.recv(4096);rc=r[3]&15;an=struct.unpack('>H',r[6:8])[0]
  print(rc, '.'.join(str(b) for b in r[-4:]) if an else '-')
except Exception as e: print('ERR',type(e).__name__)`;

/** From inside: a raw request to argv[1]:argv[2] naming argv[3] (Host header, or SNI with argv[4] = the CA); the body or ERR. */
const NAMED_PY = `import sys,socket,ssl
try:
  s=socket.create_connection((sys.argv[1],int(sys.argv[2])),timeout=3)
  if len(sys.argv)>4: s=ssl.create_default_context(cadata=sys.argv[4]).wrap_socket(s,server_hostname=sys.argv[3])
  s.sendall(('GET / HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n'%sys.argv[3]).encode());d=b''
  while True:
    c=s.recv(65536)
    if not c: break
    d+=c
  h,_,b=d.partition(b'\\r\\n\\r\\n');print(b.decode() if h.startswith(b'HTTP/1.1 200') else 'ERR '+h.split(b'\\r\\n')[0].decode())
except Exception as e: print('ERR',type(e).__name__)`;

describe('egress by domain name: resolver, HTTP/TLS proxy, rules (real runc, netns, nftables)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let internet: TestInternet;
  let hostService: Server;
  let hostPort = 0;

  const py = async (id: string, code: string, ...args: string[]) => (await run(node.manager, id, ['python3', '-c', code, ...args])).stdout.trim();
  const http = (id: string, url: string) => py(id, FETCH_PY, url);
  const https = (id: string, url: string) => py(id, FETCH_TLS_PY, url, internet.caPem);
  const dig = (id: string, server: string, name: string) => py(id, DIG_PY, server, name);

  before(async () => {
    internet = await startTestInternet();
    hostService = createServer((_q, s) => s.end('host service'));
    await new Promise<void>((r) => hostService.listen(0, '0.0.0.0', r));
    hostPort = (hostService.address() as { port: number }).port;
    process.env.FORKD_DNS_UPSTREAM = internet.dns;
    node = await createTestNode();
  });

  after(async () => {
    await node?.dispose();
    hostService?.close();
    await internet?.close();
  });

  test('allow and deny by name over HTTP and HTTPS; a denied name cannot be resolved elsewhere or reached by its address', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', allowOut: ['a.test'], denyOut: ['b.test'] } });
    assert.equal(await http(s.id, 'http://a.test/'), `hello from ${A}`);
    assert.equal(await https(s.id, 'https://a.test/'), `tls hello from ${A}`);
    assert.match(await http(s.id, 'http://b.test/'), /^ERR/);
    assert.match(await https(s.id, 'https://b.test/'), /^ERR/);
    // Every query is forkd's: to the test zone's own server, or to an address with no server at all.
    assert.equal(await dig(s.id, '198.51.100.53', 'b.test'), '3 -', 'NXDOMAIN from forkd, not the real answer');
    assert.equal(await dig(s.id, '192.0.2.9', 'b.test'), '3 -');
    assert.equal(await dig(s.id, '192.0.2.9', 'a.test'), `0 ${A}`, 'answered through forkd');
    // By address: the proxied ports refuse it (a learned denied name's address), the others are dropped in nft.
    assert.match(await http(s.id, `http://${B}/`), /^ERR/);
    assert.match(await http(s.id, `http://${B}:${internet.port}/`), /^ERR/);
    assert.equal(await http(s.id, `http://${A}:${internet.port}/`), `hello from ${A}`, 'a neutral address is reachable');
    // Naming an allowed host while connecting to another address reaches the allowed host.
    assert.equal(await py(s.id, NAMED_PY, B, '80', 'a.test'), `hello from ${A}`);
    assert.equal(await py(s.id, NAMED_PY, B, '443', 'a.test', internet.caPem), `tls hello from ${A}`);
    assert.match(await py(s.id, NAMED_PY, A, '80', 'b.test'), /^ERR/, 'naming a denied host at an allowed address');
    await node.manager.delete(s.id);
  });

  test('*. patterns, allow wins over deny; an allowed name opens its address on other ports; a runtime change applies to the next connection', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', allowOut: ['x.sub.test'], denyOut: ['*.sub.test', '0.0.0.0/0'] } });
    assert.equal(await http(s.id, 'http://x.sub.test/'), `hello from ${B}`, 'allowed name wins over the address deny');
    assert.match(await http(s.id, 'http://y.sub.test/'), /^ERR/, 'denied by the pattern');
    assert.match(await http(s.id, 'http://a.test/'), /^ERR/, 'a neutral name: the address rules deny it');
    assert.equal(await http(s.id, `http://x.sub.test:${internet.port}/`), `hello from ${B}`, 'learned: its address is allowed in nft');
    assert.match(await http(s.id, `http://${A}:${internet.port}/`), /^ERR/);

    await node.manager.setNetwork(s.id, { mode: 'egress', denyOut: ['x.sub.test'] });
    assert.match(await http(s.id, 'http://x.sub.test/'), /^ERR/);
    assert.equal(await http(s.id, 'http://a.test/'), `hello from ${A}`);
    await node.manager.delete(s.id);
  });

  test('the rules survive snapshot, fork, pause and rewind', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', denyOut: ['b.test'] } });
    const check = async (id: string, what: string) => {
      assert.equal(await http(id, 'http://a.test/'), `hello from ${A}`, `${what}: a.test`);
      assert.match(await http(id, 'http://b.test/'), /^ERR/, `${what}: b.test`);
      assert.match(await http(id, `http://${B}/`), /^ERR/, `${what}: b.test's address`);
    };
    await check(s.id, 'created');
    const snap = await node.manager.snapshot(s.id);
    const [f] = await node.manager.fork(snap.id);
    assert.ok(f);
    await check(f.id, 'fork');
    await node.manager.delete(f.id);
    await node.manager.pause(s.id);
    await node.manager.resume(s.id);
    await check(s.id, 'resumed');
    await node.manager.rewind(s.id, snap.id);
    await check(s.id, 'rewound');
    await node.manager.delete(s.id);
  });

  test("the resolver's and proxy's ports only proxy; the host and forkd stay unreachable", async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', allowOut: ['0.0.0.0/0'] } });
    const chain = (await exec('nft', ['list', 'chain', 'inet', node.env.FORKD_NET_TABLE!, 'nat_pre_sb'])).stdout;
    const ports = [...chain.matchAll(/redirect to :(\d+)/g)].map((m) => m[1]!);
    assert.equal(ports.length, 3, chain);
    for (const p of [...ports, String(hostPort)]) {
      for (const a of [GATEWAY_IP, internet.host]) assert.match(await http(s.id, `http://${a}:${p}/`), /^ERR/, `${a}:${p}`);
    }
    // Through the proxy: naming the host (its addresses) is refused, even with everything allowed.
    assert.match(await py(s.id, NAMED_PY, A, '80', internet.host), /^ERR/);
    assert.match(await py(s.id, NAMED_PY, A, '80', GATEWAY_IP), /^ERR/);
    assert.equal(await py(s.id, NAMED_PY, B, '80', A), `hello from ${A}`, 'an address as Host: that address');
    await node.manager.delete(s.id);
  });
});
