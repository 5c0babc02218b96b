import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdClient, ForkdError } from '@forkd/sdk';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { startControlPlaneProcess, startNodeProcess, stopDaemonProcess, type DaemonProcess, type NodeProcess } from '../testing/daemon-process.js';
import { startPostgres, type PostgresServer } from '../testing/postgres-server.js';
import { waitFor } from '../testing/helpers.js';
import { fetchTrusting, makeTestCertificate } from '../testing/tls-test-ca.js';

const NODE_IDS = ['node-a', 'node-b', 'node-c'] as const;

/**
 * A fleet on this machine: two control-plane replicas on one real
 * PostgreSQL, three node processes with their own pools that join them by
 * heartbeat. Sandboxes spread, either replica serves every one, a replica's
 * death changes nothing for clients, a node's death marks it lost.
 */
describe('fleet: two control planes on PostgreSQL, three nodes', { skip: !isRoot && 'needs root' }, () => {
  let pg: PostgresServer;
  let cpDir: string;
  const cps: DaemonProcess[] = [];
  const nodes = new Map<string, { proc: NodeProcess; dir: string; config: ReturnType<typeof testConfig>['config'] }>();
  let clients: ForkdClient[];
  let fetchTls: typeof fetch;
  let tlsEnv: Record<string, string>;

  before(async () => {
    pg = await startPostgres();
    const database = await pg.createDatabase();
    cpDir = await mkdtemp(join(tmpdir(), 'forkd-fleet-cp-'));
    // Every link over TLS (a node on a workstation joins a remote control plane so): API, heartbeats, the node contract.
    const tls = await makeTestCertificate(cpDir);
    fetchTls = fetchTrusting(tls.cert);
    tlsEnv = { FORKD_TLS_CERT_FILE: tls.certFile, FORKD_TLS_KEY_FILE: tls.keyFile, NODE_EXTRA_CA_CERTS: tls.certFile };
    const cpEnv = { ...process.env, ...tlsEnv, FORKD_STATE_DIR: cpDir, FORKD_DATABASE_URL: database, FORKD_E2B_API_PORT: 'off', FORKD_E2B_ENVD_PORT: 'off', FORKD_NODE_DEADLINE_S: '3', FORKD_NODE_LOST_S: '8' };
    // One after the other: the first makes the admin key, the join token and the secrets key the second reads.
    cps.push(await startControlPlaneProcess(cpEnv));
    cps.push(await startControlPlaneProcess(cpEnv));
    assert.ok(cps.every((cp) => cp.url.startsWith('https://')));
    clients = cps.map((cp) => new ForkdClient({ url: cp.url, apiKey: cp.apiKey, fetch: fetchTls }));
    await Promise.all(
      NODE_IDS.map(async (id) => {
        const dir = await mkdtemp(join(tmpdir(), `forkd-fleet-${id}-`));
        const { env, config } = testConfig(dir);
        const proc = await startNodeProcess({ ...env, ...tlsEnv, FORKD_NODE_ID: id, FORKD_CONTROL_PLANE_URL: cps.map((c) => c.url).join(','), FORKD_JOIN_TOKEN_FILE: join(cpDir, 'join.token'), FORKD_HEARTBEAT_S: '1' });
        nodes.set(id, { proc, dir, config });
      }),
    );
    await waitFor(async () => (await clients[1]!.nodes.list()).filter((n) => n.state === 'active').length === 3, 30_000, 'three nodes joined');
  });

  after(async () => {
    for (const cp of cps) await stopDaemonProcess(cp);
    for (const { proc, dir, config } of nodes.values()) {
      await stopDaemonProcess(proc, 'SIGTERM');
      await disposeNodeDir(undefined, dir, config);
    }
    await pg?.stop();
    if (cpDir) await rm(cpDir, { recursive: true, force: true });
  });

  test('nodes joined with their capacity; the fleet is the same seen from either replica', async () => {
    const [a, b] = await Promise.all(clients.map((c) => c.nodes.list()));
    assert.deepEqual(a!.map((n) => n.id), [...NODE_IDS]);
    assert.deepEqual(b!.map((n) => n.id), [...NODE_IDS]);
    for (const n of a!) {
      assert.ok(n.capacity.memoryFreeBytes > 0 && n.capacity.poolFreeBytes > 0, `${n.id} reports room`);
      assert.deepEqual(n.capacity.templates, ['base']);
      assert.ok(!('sealedToken' in n) && !('token' in n), 'no node token in the API');
    }
  });

  test('sandboxes spread over the nodes; each is reached by id through either replica', async () => {
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await clients[i % 2]!.sandboxes.create({ memoryMb: 256, metadata: { n: String(i) } }));
    const placed = new Set<string>();
    for (const { proc } of nodes.values()) {
      const res = await fetchTls(`${proc.url}/node/v1/sandboxes`, { headers: { authorization: `Bearer ${proc.token}` } });
      const ids = ((await res.json()) as { sandboxes: { id: string }[] }).sandboxes.map((s) => s.id);
      if (made.some((s) => ids.includes(s.id))) placed.add(proc.url);
    }
    assert.equal(placed.size, 3, 'one sandbox on each node');
    for (const s of made) {
      const other = await clients[1]!.sandboxes.get(s.id);
      const r = await other.exec(['cat', '/etc/hostname']);
      assert.equal(r.stdout.trim(), s.id);
    }
    const listed = (await clients[0]!.sandboxes.list()).map((s) => s.id);
    for (const s of made) assert.ok(listed.includes(s.id));
    assert.deepEqual((await clients[0]!.nodes.list()).map((n) => n.sandboxes).sort(), [1, 1, 1]);
    for (const s of made) await s.delete();
  });

  test('a drained node takes no new sandboxes; a node holding sandboxes cannot be removed', async () => {
    await clients[0]!.nodes.drain('node-a');
    const made = [];
    for (let i = 0; i < 2; i++) made.push(await clients[0]!.sandboxes.create({ memoryMb: 256 }));
    const onA = (await clients[0]!.nodes.list()).find((n) => n.id === 'node-a')!;
    assert.equal(onA.state, 'draining');
    assert.equal(onA.sandboxes, 0);
    const holder = (await clients[0]!.nodes.list()).find((n) => n.sandboxes > 0)!;
    await assert.rejects(clients[0]!.nodes.remove(holder.id), (e: unknown) => e instanceof ForkdError && e.code === 'FAILED_PRECONDITION');
    for (const s of made) await s.delete();
  });

  test('one control plane killed: the other serves everything', async () => {
    const s = await clients[0]!.sandboxes.create({ memoryMb: 256 });
    await stopDaemonProcess(cps[0]);
    const again = await clients[1]!.sandboxes.get(s.id);
    assert.equal((await again.exec(['echo', 'still here'])).stdout, 'still here\n');
    await waitFor(async () => (await clients[1]!.nodes.list()).every((n) => Date.now() - Date.parse(n.lastSeenAt) < 3000), 20_000, 'nodes heartbeat to the surviving replica');
    await again.delete();
  });

  test('a node killed is marked lost; its sandboxes answer UNAVAILABLE, the others keep working', async () => {
    const made = [];
    for (let i = 0; i < 2; i++) made.push(await clients[1]!.sandboxes.create({ memoryMb: 256 }));
    const holders = await clients[1]!.nodes.list();
    const victim = holders.find((n) => n.sandboxes > 0)!;
    await stopDaemonProcess(nodes.get(victim.id)!.proc);
    await waitFor(async () => (await clients[1]!.nodes.list()).find((n) => n.id === victim.id)?.state === 'lost', 30_000, `${victim.id} marked lost`);
    let unavailable = 0;
    for (const s of made) {
      try {
        await (await clients[1]!.sandboxes.get(s.id)).exec(['true']);
      } catch (err) {
        assert.ok(err instanceof ForkdError && err.code === 'UNAVAILABLE', String(err));
        unavailable++;
      }
    }
    assert.equal(unavailable, victim.sandboxes);
  });
});
