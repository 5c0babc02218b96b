import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { api, execHttp } from '../testing/http-client.js';
import { assertStillServing } from '../testing/still-serving.js';
import { startTestInternet, type TestInternet } from '../testing/test-internet.js';
import { ANY_DNS, FLOOD_PY, HOLD_TCP_PY, HOST_PY, QTYPE, QUERY_PY } from '../testing/dns-probes.js';

/**
 * A hostile egress sandbox against forkd's resolver, through a real daemon:
 * a DNS tunnel out of a sandbox whose addresses are all denied, and a flood
 * of queries and TCP connections meant to starve every other tenant's DNS.
 */
describe('adversarial DNS: tunnels and floods through a real daemon', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let internet: TestInternet;
  let neighbour = '';

  const py = async (id: string, code: string, ...args: string[]) => (await execHttp(daemon, id, ['python3', '-c', code, ...args])).stdout.trim();
  const create = async (network: object) => {
    const r = await api(daemon, 'POST', '/v1/sandboxes', { memoryMb: 128, network });
    assert.equal(r.status, 201, r.text);
    return r.json.id as string;
  };

  before(async () => {
    internet = await startTestInternet();
    dir = await mkdtemp(join(tmpdir(), 'forkd-adv-dns-'));
    cfg = testConfig(dir);
    cfg.env.FORKD_DNS_UPSTREAM = internet.dns;
    daemon = await startDaemonProcess(cfg.env);
    neighbour = await create({ mode: 'egress' });
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    await internet?.close();
  });

  test('a sandbox whose addresses are all denied tunnels through DNS (TXT, A, TCP, a Host header): nothing reaches the upstream', async () => {
    const id = await create({ mode: 'egress', denyOut: ['0.0.0.0/0'] });
    const from = (await internet.dnsQueries()).length;
    assert.equal(await py(id, QUERY_PY, 'udp', ANY_DNS, 'c2VjcmV0.tunnel.test', QTYPE.TXT), '3 0');
    assert.equal(await py(id, QUERY_PY, 'udp', ANY_DNS, 'aGVsbG8.tunnel.test', QTYPE.A), '3 0');
    assert.equal(await py(id, QUERY_PY, 'tcp', ANY_DNS, 'eC10Y3A.tunnel.test', QTYPE.TXT), '3 0');
    assert.match(await py(id, HOST_PY, '198.51.100.2', 'aHR0cA.tunnel.test'), /^HTTP\/1.1 403/);
    assert.deepEqual((await internet.dnsQueries()).slice(from), []);
    await assertStillServing(daemon, neighbour, daemon.child);
    assert.equal((await api(daemon, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });

  test("a sandbox flooding the resolver (UDP queries the upstream never answers, TCP connections held) does not starve a neighbour's lookups", async (t) => {
    const id = await create({ mode: 'egress' });
    const flood = py(id, FLOOD_PY, ANY_DNS, '6');
    const hold = py(id, HOLD_TCP_PY, ANY_DNS, '160', '5');
    await new Promise((r) => setTimeout(r, 2000));
    const lookups = [];
    for (const proto of ['udp', 'tcp', 'udp', 'tcp']) lookups.push(await py(neighbour, QUERY_PY, proto, ANY_DNS, 'a.test', QTYPE.A));
    const [f, kept] = [JSON.parse(await flood) as { sent: number; got: Record<string, number> }, Number(await hold)];
    t.diagnostic(`flood: ${JSON.stringify(f)}; TCP connections kept: ${kept} of 160`);
    assert.deepEqual(lookups, Array(4).fill('0 1 198.51.100.2'), `the neighbour's lookups during the flood`);
    assert.ok(kept <= 8, `TCP connections kept: ${kept}`);
    await assertStillServing(daemon, neighbour, daemon.child);
    assert.equal((await api(daemon, 'DELETE', `/v1/sandboxes/${id}`)).status, 204);
  });
});
