import { exec } from '@forkd/server';
import { createTestNode, run, startTestInternet } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { liveRows, type BenchRow } from './row-line.js';

/**
 * argv: address, Host, count, bytes, port. Each request on a new connection; prints
 * per-request latencies (ms) of small requests, then MB/s of `count` downloads
 * of `bytes`, then latencies of small requests on one kept-alive connection
 * after a 2 MB download (through the proxy: a connection in forkd-splice).
 * The same script runs on the host (direct) and in a sandbox (through
 * forkd's proxy: port 80 is redirected to it).
 */
const CLIENT_PY = `import sys,socket,time
addr,host,n,size,port=sys.argv[1],sys.argv[2],int(sys.argv[3]),int(sys.argv[4]),int(sys.argv[5])
def get(path):
  s=socket.create_connection((addr,port));s.setsockopt(socket.IPPROTO_TCP,socket.TCP_NODELAY,1)
  s.sendall(('GET %s HTTP/1.1\\r\\nHost: %s\\r\\nConnection: close\\r\\n\\r\\n'%(path,host)).encode());t=0
  while True:
    c=s.recv(262144)
    if not c: break
    t+=len(c)
  s.close();return t
get('/')
lat=[]
for i in range(n):
  t0=time.perf_counter();get('/');lat.append((time.perf_counter()-t0)*1000)
print(' '.join('%.3f'%x for x in lat))
mbs=[]
for i in range(max(3,n//10)):
  t0=time.perf_counter();b=get('/bytes/%d'%size);mbs.append(b/1e6/(time.perf_counter()-t0))
print(' '.join('%.1f'%x for x in mbs))
import http.client
c=http.client.HTTPConnection(addr,port);c.request('GET','/bytes/2000000',headers={'Host':host});c.getresponse().read()
ka=[]
for i in range(n):
  t0=time.perf_counter();c.request('GET','/',headers={'Host':host});c.getresponse().read();ka.append((time.perf_counter()-t0)*1000)
print(' '.join('%.3f'%x for x in ka))`;

const nums = (line: string | undefined) => (line ?? '').trim().split(/\s+/).filter(Boolean).map(Number);

/** Egress through forkd's HTTP proxy vs a direct connection from the host to the same test server. */
export async function egressProxyRows(quick: boolean): Promise<BenchRow[]> {
  const n = quick ? 20 : 200;
  const size = quick ? 20_000_000 : 200_000_000;
  const internet = await startTestInternet();
  process.env.FORKD_DNS_UPSTREAM = internet.dns;
  const node = await createTestNode();
  const A = internet.named[0];
  const rows = liveRows();
  try {
    const s = await node.manager.create({ memoryMb: 256, network: { mode: 'egress', allowOut: ['a.test'] } });
    const args = [A, 'a.test', String(n), String(size)];
    const direct = (await exec('python3', ['-c', CLIENT_PY, ...args, '80'])).stdout.split('\n');
    const dl = summarize(nums(direct[0]));
    const dlKept = summarize(nums(direct[2]));
    const dlBytes = summarize(nums(direct[1]));
    rows.push(
      { name: 'egress HTTP request (new connection), direct from the host', unit: 'ms', summary: dl },
      { name: 'egress HTTP request (kept-alive connection after 2 MB), direct from the host', unit: 'ms', summary: dlKept },
      { name: 'egress HTTP download throughput, direct from the host', unit: 'MB/s', summary: dlBytes },
    );
    // The same server's port 8080 from the sandbox: the nft path (veth, NAT), no proxy: what the proxy itself adds.
    const nftPath = (await run(node.manager, s.id, ['python3', '-c', CLIENT_PY, ...args, String(internet.port)])).stdout.split('\n');
    rows.push(
      { name: 'egress HTTP request (new connection), sandbox, nft path (no proxy)', unit: 'ms', summary: summarize(nums(nftPath[0])) },
      { name: 'egress HTTP download throughput, sandbox, nft path (no proxy)', unit: 'MB/s', summary: summarize(nums(nftPath[1])) },
    );
    const proxied = (await run(node.manager, s.id, ['python3', '-c', CLIENT_PY, ...args, '80'])).stdout.split('\n');
    rows.push(
      { name: 'egress HTTP request (new connection), sandbox through the proxy', unit: 'ms', target: `p50 ≤ direct + 2 (${(dl.p50 + 2).toFixed(2)})`, summary: summarize(nums(proxied[0])) },
      { name: 'egress HTTP request (kept-alive connection after 2 MB: spliced), sandbox through the proxy', unit: 'ms', target: `p50 ≤ direct + 2 (${(dlKept.p50 + 2).toFixed(2)})`, summary: summarize(nums(proxied[2])) },
      { name: 'egress HTTP download throughput, sandbox through the proxy', unit: 'MB/s', target: `p50 ≥ 80% of direct (${(dlBytes.p50 * 0.8).toFixed(0)})`, summary: summarize(nums(proxied[1])) },
    );
    await node.manager.delete(s.id);
    return [...rows];
  } finally {
    await node.dispose();
    await internet.close();
  }
}

/** `node dist/egress-proxy.js [--quick]`: only these rows. */
if (process.argv[1]?.endsWith('egress-proxy.js')) {
  egressProxyRows(process.argv.includes('--quick')).catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
