import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec, spawnStream } from '../shared/exec.js';
import { waitFor } from './helpers.js';

/**
 * A test's own "internet": a network namespace with HTTP servers on
 * documentation addresses (203.0.113.2 and .3, port 8080; each answers
 * `/bytes/<n>` with n bytes, a POST with its body's size, anything else with
 * `hello from <addr>`) and one on an address forkd denies by default, routed from the host over a veth of the test's own.
 * Forwarding is turned on for that link only (no host-wide sysctl); close()
 * removes the link, its route and the namespace.
 */
export interface TestInternet {
  /** The host's address on the link. */
  host: string;
  servers: [string, string];
  /** A server on an address denied by default (198.18.0.2, benchmarking: private to forkd). */
  privateServer: string;
  port: number;
  /** Packets the internet's side of the link has received (what got out of the host). */
  rxPackets(): Promise<number>;
  close(): Promise<void>;
}

// `/bytes/<n>`: n bytes (a download to time); a POST: the size of its body (an upload to time).
const SERVE = `const http=require('node:http');const p=Number(process.argv[1]);const h=(a)=>(q,s)=>{const m=/^\\/bytes\\/(\\d+)$/.exec(q.url);if(m)return s.end(Buffer.alloc(Math.min(Number(m[1]),1<<26)));if(q.method==='POST'){let n=0;q.on('data',(d)=>n+=d.length);return q.on('end',()=>s.end(String(n)));}s.end('hello from '+a)};for(const a of process.argv.slice(2))http.createServer(h(a)).listen(p,a);`;

/** From inside a sandbox (python3): the body, or ERR and why (a dropped connection times out after 2 s). */
export const FETCH_PY = `import sys,urllib.request
try: print(urllib.request.urlopen(sys.argv[1],timeout=2).read().decode())
except Exception as e: print('ERR',type(e).__name__)`;

export async function startTestInternet(): Promise<TestInternet> {
  const host = '203.0.113.1';
  const servers: [string, string] = ['203.0.113.2', '203.0.113.3'];
  const privateServer = '198.18.0.2';
  const port = 8080;
  const dir = await mkdtemp(join(tmpdir(), 'forkd-internet-'));
  const netns = join(dir, 'netns');
  const uplink = `fti${randomBytes(3).toString('hex')}`;
  let serving: ReturnType<typeof spawnStream> | undefined;
  const close = async () => {
    serving?.kill();
    await exec('ip', ['link', 'del', uplink], { allowFailure: true });
    await exec('umount', [netns], { allowFailure: true });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await writeFile(netns, '');
    await exec('unshare', [`--net=${netns}`, 'true']);
    await exec('ip', ['link', 'add', uplink, 'type', 'veth', 'peer', 'name', 'up0', 'netns', netns]);
    const inside = ['link set lo up', 'link set up0 up', ...servers.map((a) => `addr add ${a}/24 dev up0`), `addr add ${privateServer}/24 dev up0`, `route add default via ${host}`];
    await exec('nsenter', [`--net=${netns}`, 'ip', '-batch', '-'], { input: inside.join('\n') + '\n' });
    await exec('ip', ['-batch', '-'], { input: [`addr add ${host}/24 dev ${uplink}`, `addr add 198.18.0.1/24 dev ${uplink}`, `link set ${uplink} up`].join('\n') + '\n' });
    // Replies come back in through the uplink: forwarding on the test's own link only. No IPv6 (no
    // neighbour discovery chatter in rxPackets).
    await writeFile(`/proc/sys/net/ipv4/conf/${uplink}/forwarding`, '1');
    await writeFile(`/proc/sys/net/ipv6/conf/${uplink}/disable_ipv6`, '1');
    await exec('nsenter', [`--net=${netns}`, 'sysctl', '-qw', 'net.ipv6.conf.up0.disable_ipv6=1']);
    serving = spawnStream('nsenter', [`--net=${netns}`, process.execPath, '-e', SERVE, String(port), ...servers, privateServer]);
    serving.stream.on('error', () => {}); // killed at close
    await waitFor(async () => (await exec('nsenter', [`--net=${netns}`, 'ss', '-Htln'], { allowFailure: true })).stdout.includes(`${privateServer}:${port}`), 10_000, 'the test servers');
  } catch (err) {
    await close();
    throw err;
  }
  const rxPackets = async () => {
    const j = JSON.parse((await exec('nsenter', [`--net=${netns}`, 'ip', '-s', '-j', 'link', 'show', 'up0'])).stdout) as Array<{ stats64?: { rx?: { packets?: number } } }>;
    return j[0]?.stats64?.rx?.packets ?? 0;
  };
  return { host, servers, privateServer, port, rxPackets, close };
}
