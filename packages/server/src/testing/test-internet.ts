import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exec, spawnStream } from '../shared/exec.js';
import { processAlive, waitFor } from './helpers.js';
import { DNS_ADDR, DNS_LOG } from './test-internet-servers.js';

const SERVERS_JS = fileURLToPath(new URL('./test-internet-servers.js', import.meta.url));

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
  /** The internet's network namespace (a bind-mounted file): for a test's own servers in it (nsenter --net=). */
  netns: string;
  /**
   * The servers the test zone names, on addresses of their own (198.51.100.2
   * and .3: the same servers, in a block older test internets of parallel
   * runs do not route, so name tests do not depend on whose route wins).
   */
  named: [string, string];
  /** Its DNS server (198.51.100.53:53) for the test zone (`zone`). */
  dns: string;
  /** Names → addresses: a.test → named[0], b.test → named[1], *.sub.test → named[1], private.test → privateServer. */
  zone: Record<string, string>;
  /** The test CA (PEM) that signed the HTTPS servers' certificate (for every name of the zone and every address). */
  caPem: string;
  /** Packets the internet's side of the link has received (what got out of the host). */
  rxPackets(): Promise<number>;
  /** Every query its DNS server has received so far, as `name type` (e.g. `a.test 1`); names under `.hang.test` get no answer. */
  dnsQueries(): Promise<string[]>;
  close(): Promise<void>;
}


/** From inside a sandbox (python3): the body, or ERR and why (a dropped connection times out after 2 s). */
export const FETCH_PY = `import sys,urllib.request
try: print(urllib.request.urlopen(sys.argv[1],timeout=2).read().decode())
except Exception as e: print('ERR',type(e).__name__)`;

/** FETCH_PY over HTTPS trusting the CA given as argv[2] (PEM text), the name checked. */
export const FETCH_TLS_PY = `import sys,ssl,urllib.request
try: print(urllib.request.urlopen(sys.argv[1],timeout=3,context=ssl.create_default_context(cadata=sys.argv[2])).read().decode())
except Exception as e: print('ERR',type(e).__name__)`;

/** A test CA and a server certificate it signed for `names` and `ips`, in `dir` (ca.pem, server.key, server.pem). */
export async function makeTestCa(dir: string, names: string[], ips: string[]): Promise<string> {
  const o = (args: string[]) => exec('openssl', args);
  await o(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'ca.key'), '-out', join(dir, 'ca.pem'), '-days', '2', '-subj', '/CN=forkd test CA']);
  await o(['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', join(dir, 'server.key'), '-out', join(dir, 'server.csr'), '-subj', `/CN=${names[0] ?? 'test'}`]);
  const san = [...names.map((n) => `DNS:${n}`), ...ips.map((i) => `IP:${i}`)].join(',');
  await writeFile(join(dir, 'ext.cnf'), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
  await o(['x509', '-req', '-in', join(dir, 'server.csr'), '-CA', join(dir, 'ca.pem'), '-CAkey', join(dir, 'ca.key'), '-CAcreateserial', '-out', join(dir, 'server.pem'), '-days', '2', '-extfile', join(dir, 'ext.cnf')]);
  return readFile(join(dir, 'ca.pem'), 'utf8');
}

const DIR_PREFIX = 'forkd-internet-';
const UPLINK = /^fti[0-9a-f]{6}$/;

/**
 * Removes the internets of runs that died without close() (a test file
 * killed at its timeout, a session's end). Each keeps its namespace (a bind
 * mount) and its link, whose routes to the same blocks come first: a later
 * internet's traffic went to the dead one's namespace, refused, and every
 * egress test of a CI run on that machine failed. An internet is live while
 * the process that made it is; a link of ours that no live internet names
 * is a leftover too.
 */
async function sweepStaleInternets(): Promise<void> {
  const live = new Set<string>();
  for (const name of (await readdir(tmpdir()).catch(() => [] as string[])).filter((n) => n.startsWith(DIR_PREFIX))) {
    const d = join(tmpdir(), name);
    const owner = Number((await readFile(join(d, 'owner'), 'utf8').catch(() => '')).trim());
    const uplink = (await readFile(join(d, 'uplink'), 'utf8').catch(() => '')).trim();
    if (owner > 0 && processAlive(owner)) {
      live.add(uplink);
      continue;
    }
    const servers = Number((await readFile(join(d, 'servers'), 'utf8').catch(() => '')).trim());
    if (servers > 0 && processAlive(servers)) process.kill(servers, 'SIGKILL');
    if (UPLINK.test(uplink)) await exec('ip', ['link', 'del', uplink], { allowFailure: true });
    await exec('umount', ['-l', join(d, 'netns')], { allowFailure: true });
    await rm(d, { recursive: true, force: true });
  }
  const links = JSON.parse((await exec('ip', ['-j', 'link', 'show'])).stdout) as Array<{ ifname?: string }>;
  for (const l of links) {
    if (l.ifname && UPLINK.test(l.ifname) && !live.has(l.ifname)) await exec('ip', ['link', 'del', l.ifname], { allowFailure: true });
  }
}

/** `zone`: more names for the DNS server (a test's own servers in the namespace). */
export async function startTestInternet(opts: { zone?: Record<string, string> } = {}): Promise<TestInternet> {
  const host = '203.0.113.1';
  const servers: [string, string] = ['203.0.113.2', '203.0.113.3'];
  const privateServer = '198.18.0.2';
  const port = 8080;
  const named: [string, string] = ['198.51.100.2', '198.51.100.3'];
  const zone: Record<string, string> = { 'a.test': named[0], 'b.test': named[1], '*.sub.test': named[1], 'private.test': privateServer, ...opts.zone };
  let caPem = '';
  await sweepStaleInternets();
  const dir = await mkdtemp(join(tmpdir(), DIR_PREFIX));
  const netns = join(dir, 'netns');
  const uplink = `fti${randomBytes(3).toString('hex')}`;
  // Recorded before the link exists: a parallel run's sweep never takes it for a leftover.
  await writeFile(join(dir, 'uplink'), uplink);
  await writeFile(join(dir, 'owner'), String(process.pid));
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
    const inside = ['link set lo up', 'link set up0 up', ...[...servers, ...named].map((a) => `addr add ${a}/24 dev up0`), `addr add ${DNS_ADDR}/24 dev up0`, `addr add ${privateServer}/24 dev up0`, `route add default via ${host}`];
    await exec('nsenter', [`--net=${netns}`, 'ip', '-batch', '-'], { input: inside.join('\n') + '\n' });
    await exec('ip', ['-batch', '-'], { input: [`addr add ${host}/24 dev ${uplink}`, `addr add 198.51.100.1/24 dev ${uplink}`, `addr add 198.18.0.1/24 dev ${uplink}`, `link set ${uplink} up`].join('\n') + '\n' });
    // Replies come back in through the uplink: forwarding on the test's own link only. No IPv6 (no
    // neighbour discovery chatter in rxPackets).
    await writeFile(`/proc/sys/net/ipv4/conf/${uplink}/forwarding`, '1');
    await writeFile(`/proc/sys/net/ipv6/conf/${uplink}/disable_ipv6`, '1');
    await exec('nsenter', [`--net=${netns}`, 'sysctl', '-qw', 'net.ipv6.conf.up0.disable_ipv6=1']);
    caPem = await makeTestCa(dir, Object.keys(zone), [...servers, ...named, privateServer]);
    serving = spawnStream('nsenter', [`--net=${netns}`, process.execPath, SERVERS_JS, String(port), dir, JSON.stringify(zone), ...servers, ...named, privateServer]);
    serving.stream.on('error', () => {}); // killed at close
    if (serving.pid) await writeFile(join(dir, 'servers'), String(serving.pid));
    await waitFor(async () => {
      const ss = (await exec('nsenter', [`--net=${netns}`, 'ss', '-Htuln'], { allowFailure: true })).stdout;
      return ss.includes(`${privateServer}:443`) && ss.includes(`${DNS_ADDR}:53`);
    }, 10_000, 'the test servers');
    // Another internet's route to the same blocks would win silently: fail here, saying so.
    for (const a of [servers[0], named[0], privateServer]) {
      const via = (await exec('ip', ['-o', 'route', 'get', a])).stdout;
      if (!via.includes(` dev ${uplink} `)) throw new Error(`test internet: ${a} routes elsewhere (${via.trim()}); another test internet holds its block`);
    }
  } catch (err) {
    await close();
    throw err;
  }
  const rxPackets = async () => {
    const j = JSON.parse((await exec('nsenter', [`--net=${netns}`, 'ip', '-s', '-j', 'link', 'show', 'up0'])).stdout) as Array<{ stats64?: { rx?: { packets?: number } } }>;
    return j[0]?.stats64?.rx?.packets ?? 0;
  };
  const dnsQueries = async () => (await readFile(join(dir, DNS_LOG), 'utf8').catch(() => '')).split('\n').filter(Boolean);
  return { host, servers, named, privateServer, port, netns, dns: `${DNS_ADDR}:53`, zone, caPem, rxPackets, dnsQueries, close };
}
