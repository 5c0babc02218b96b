import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { ForkdClient, ForkdError, type Sandbox } from '@forkd/sdk';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { randomPort, startControlPlaneProcess, startNodeProcess, stopDaemonProcess, type DaemonProcess, type NodeProcess } from '../testing/daemon-process.js';
import { startPostgres, type PostgresServer } from '../testing/postgres-server.js';
import { waitFor } from '../testing/helpers.js';
import { DirBlobStore } from '../blob/dir-blob-store.js';
import { fetchTrusting, makeTestCertificate } from '../testing/tls-test-ca.js';
import { startFleetNetwork, type FleetNetwork } from '../testing/fleet-network.js';

const NODE_IDS = ['node-a', 'node-b', 'node-c'] as const;
/** A process whose state is in memory and on disk: a count written every 200 ms. */
const COUNTER = ['bash', '-c', 'i=0; while :; do i=$((i+1)); echo $i > /tmp/count; sleep 0.2; done'];
/** A TCP server on the sandbox's loopback counting the lines of its one connection (/tmp/tcp-lines) and how many it accepted (/tmp/tcp-accepts). */
const TCP_SERVER = ['python3', '-c', [
  'import socket',
  's = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", 7070)); s.listen()',
  'accepts = 0',
  'while True:',
  '  c, _ = s.accept(); accepts += 1; open("/tmp/tcp-accepts", "w").write(str(accepts)); n = 0',
  '  for line in c.makefile():',
  '    n += 1; open("/tmp/tcp-lines", "w").write(str(n))',
].join('\n')];
/** Its client: one connection, a line every 0.2 s; a broken connection is written down, never redialled. */
const TCP_CLIENT = ['python3', '-c', [
  'import socket, time',
  'c = socket.create_connection(("127.0.0.1", 7070))',
  'try:',
  '  while True: c.sendall(b"tick\\n"); time.sleep(0.2)',
  'except OSError as e:',
  '  open("/tmp/tcp-broken", "w").write(str(e))',
].join('\n')];

/**
 * A fleet on this machine: two control-plane replicas on one real
 * PostgreSQL, three node processes, each with its own pool and in its own
 * network namespace (testing/fleet-network.ts), that join them by
 * heartbeat over TLS. Sandboxes spread, either replica serves every one, a replica's
 * death changes nothing for clients, a node's death marks it lost.
 */
describe('fleet: two control planes on PostgreSQL, three nodes', { skip: !isRoot && 'needs root' }, () => {
  let pg: PostgresServer;
  let cpDir: string;
  const cps: DaemonProcess[] = [];
  const nodes = new Map<string, { proc: NodeProcess; dir: string; config: ReturnType<typeof testConfig>['config']; env: NodeJS.ProcessEnv; wrap: string[] }>();
  let clients: ForkdClient[];
  let fetchTls: typeof fetch;
  let e2bPorts: number[] = [];
  let tlsEnv: Record<string, string>;
  let net: FleetNetwork | undefined;

  before(async () => {
    pg = await startPostgres();
    const database = await pg.createDatabase();
    cpDir = await mkdtemp(join(tmpdir(), 'forkd-fleet-cp-'));
    // Each node in a network namespace of its own, on a bridge where the control planes listen.
    net = await startFleetNetwork(NODE_IDS.length);
    // Every link over TLS (a node on a workstation joins a remote control plane so): API, heartbeats, the node contract.
    const tls = await makeTestCertificate(cpDir, [net.hostIp, ...net.nodes.map((n) => n.ip)]);
    fetchTls = fetchTrusting(tls.cert);
    tlsEnv = { FORKD_TLS_CERT_FILE: tls.certFile, FORKD_TLS_KEY_FILE: tls.keyFile, NODE_EXTRA_CA_CERTS: tls.certFile };
    const cpEnv = { ...process.env, ...tlsEnv, FORKD_HOST: net.hostIp, FORKD_STATE_DIR: cpDir, FORKD_DATABASE_URL: database, FORKD_E2B_API_PORT: 'off', FORKD_E2B_ENVD_PORT: 'off', FORKD_NODE_DEADLINE_S: '3', FORKD_NODE_LOST_S: '8', FORKD_EXPORT_INTERVAL_S: '2' };
    // One after the other: the first makes the admin key, the join token and the secrets key the second reads.
    cps.push(await startControlPlaneProcess(cpEnv));
    // The second replica also serves the E2B API and envd gateway (plain HTTP on the bridge), over the same fleet.
    e2bPorts = [randomPort(), randomPort()];
    cps.push(await startControlPlaneProcess({ ...cpEnv, FORKD_E2B_API_PORT: String(e2bPorts[0]), FORKD_E2B_ENVD_PORT: String(e2bPorts[1]) }));
    assert.ok(cps.every((cp) => cp.url.startsWith('https://')));
    clients = cps.map((cp) => new ForkdClient({ url: cp.url, apiKey: cp.apiKey, fetch: fetchTls }));
    await Promise.all(
      NODE_IDS.map(async (id, i) => {
        const ns = net!.nodes[i]!;
        const dir = await mkdtemp(join(tmpdir(), `forkd-fleet-${id}-`));
        const { env, config } = testConfig(dir);
        // node-a is small: room for one 256 MB sandbox, so a fork of one there must land elsewhere.
        // Its sandboxes (a template build's too) are at most 256 MB, so a build there fits.
        const small = id === 'node-a' ? { FORKD_MEMORY_OVERCOMMIT: String(400 / (totalmem() / 2 ** 20)), FORKD_MAX_MEMORY_MB: '256' } : {};
        const nodeEnv = {
          ...env,
          ...tlsEnv,
          ...small,
          FORKD_NODE_ID: id,
          FORKD_HOST: ns.ip,
          FORKD_CONTROL_PLANE_URL: cps.map((c) => c.url).join(','),
          FORKD_JOIN_TOKEN_FILE: join(cpDir, 'join.token'),
          FORKD_HEARTBEAT_S: '1',
          FORKD_BLOB_STORE: `dir:${join(cpDir, 'blobs')}`,
        };
        const proc = await startNodeProcess(nodeEnv, ns.wrap);
        nodes.set(id, { proc, dir, config, env: nodeEnv, wrap: ns.wrap });
      }),
    );
    await waitFor(async () => (await clients[1]!.nodes.list()).filter((n) => n.state === 'active').length === 3, 30_000, 'three nodes joined');
  });

  after(async () => {
    // FORKD_TEST_LOG_DIR: every process's log kept there (a failure here spans five processes).
    const keep = process.env.FORKD_TEST_LOG_DIR;
    if (keep) {
      await mkdir(keep, { recursive: true });
      for (const [i, cp] of cps.entries()) await writeFile(join(keep, `cp-${i}.log`), cp.log());
      for (const [id, n] of nodes) await writeFile(join(keep, `${id}.log`), n.proc.log());
    }
    for (const cp of cps) await stopDaemonProcess(cp);
    for (const { proc, dir, config } of nodes.values()) {
      await stopDaemonProcess(proc, 'SIGTERM');
      await disposeNodeDir(undefined, dir, config);
    }
    await pg?.stop();
    await net?.close();
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
    assert.equal(placed.size, 2, 'spread over the two big nodes (node-a has room for one, and less than they do)');
    for (const s of made) {
      const other = await clients[1]!.sandboxes.get(s.id);
      await s.exec(['bash', '-c', `echo ${s.id} > /root/who`]);
      const r = await other.exec(['cat', '/root/who']);
      assert.equal(r.stdout.trim(), s.id);
    }
    const listed = (await clients[0]!.sandboxes.list()).map((s) => s.id);
    for (const s of made) assert.ok(listed.includes(s.id));
    assert.deepEqual((await clients[0]!.nodes.list()).map((n) => n.sandboxes).sort(), [0, 1, 2]);
    for (const s of made) await s.delete();
  });

  test('a template built on one node: a create that finds that node full copies it to another and starts there', async () => {
    // Built on node-a itself (the fleet would build where there is most room), as a team builds on the node it was given.
    const a = nodes.get('node-a')!.proc;
    const res = await fetchTls(`${a.url}/node/v1/templates`, { method: 'POST', headers: { authorization: `Bearer ${a.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'on-a', setup: ['echo from-a > /etc/on-a'] }) });
    assert.equal(JSON.parse((await res.text()).trim().split('\n').at(-1)!).type, 'done');
    const holders = async () => (await clients[0]!.nodes.list()).filter((n) => n.capacity.templates.includes('on-a')).map((n) => n.id);
    await waitFor(async () => (await holders()).includes('node-a'), 10_000, 'node-a to list the template');
    const made: Sandbox[] = [];
    try {
      made.push(await clients[0]!.sandboxes.create({ template: 'on-a', memoryMb: 256 }));
      // Through the same replica: what it placed since node-a's last heartbeat counts (another replica learns it at that heartbeat).
      made.push(await clients[0]!.sandboxes.create({ template: 'on-a', memoryMb: 256 }));
      const counts = Object.fromEntries((await clients[0]!.nodes.list()).map((n) => [n.id, n.sandboxes]));
      assert.equal(counts['node-a'], 1, 'node-a took the one it had room for');
      assert.equal(counts['node-b']! + counts['node-c']!, 1, 'the other spilled to a node that had no copy');
      for (const s of made) assert.equal((await s.exec(['cat', '/etc/on-a'])).stdout, 'from-a\n');
      await waitFor(async () => (await holders()).length === 2, 10_000, 'both holders in heartbeats');
    } finally {
      for (const s of made) await s.delete();
    }
    // Built behind the control plane's back, it has no owner (shared: not deletable through the API; template-copies.test.ts deletes every copy): removed on each node.
    for (const id of await holders()) {
      const n = nodes.get(id)!.proc;
      assert.equal((await fetchTls(`${n.url}/node/v1/templates/on-a`, { method: 'DELETE', headers: { authorization: `Bearer ${n.token}` } })).status, 204);
    }
  });

  test("the official E2B SDK works against the fleet unchanged", async () => {
    const { key } = await clients[1]!.keys.create({ format: 'e2b', tenant: 'e2b-fleet' });
    const { Sandbox: E2b } = await import('e2b');
    const opts = { apiKey: key, apiUrl: `http://${net!.hostIp}:${e2bPorts[0]}`, sandboxUrl: `http://${net!.hostIp}:${e2bPorts[1]}`, timeoutMs: 120_000 };
    const sbx = await E2b.create('base', opts);
    try {
      const r = await sbx.commands.run('echo hello $((6*7))');
      assert.equal(r.stdout, 'hello 42\n');
      await sbx.files.write('/tmp/e2b.txt', 'written through envd');
      assert.equal(await sbx.files.read('/tmp/e2b.txt'), 'written through envd');
      assert.ok((await clients[1]!.nodes.list()).some((n) => n.sandboxes > 0));
    } finally {
      await sbx.kill();
    }
  });

  test('the official MCP client works against the fleet unchanged (streamable HTTP over TLS)', async () => {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StreamableHTTPClientTransport } = await import('@modelcontextprotocol/sdk/client/streamableHttp.js');
    const transport = new StreamableHTTPClientTransport(new URL(`${cps[1]!.url}/mcp`), { fetch: fetchTls, requestInit: { headers: { authorization: `Bearer ${cps[1]!.apiKey}` } } });
    const client = new Client({ name: 'forkd-fleet-test', version: '0' });
    await client.connect(transport);
    try {
      const call = async (name: string, args: Record<string, unknown>) => {
        const r = (await client.callTool({ name, arguments: args })) as { isError?: boolean; structuredContent?: Record<string, unknown>; content: unknown };
        assert.ok(!r.isError, `${name}: ${JSON.stringify(r.content)}`);
        return r.structuredContent!;
      };
      const made = (await call('sandbox_create', {})) as { id: string };
      const out = (await call('sandbox_exec', { sandbox_id: made.id, command: 'echo mcp $((2*21))' })) as { stdout: string };
      assert.equal(out.stdout, 'mcp 42\n');
      assert.ok((await clients[1]!.nodes.list()).some((n) => n.sandboxes > 0));
      await call('sandbox_kill', { sandbox_id: made.id });
    } finally {
      await client.close();
    }
  });

  let moving: Sandbox;
  /** The node the loss test kills (and the next one brings back). */
  let lostNode: string | undefined;

  test('a sandbox moves to another node under its id: its processes go on counting over the TCP connection they hold, its files and timeline follow', async () => {
    moving = await clients[0]!.sandboxes.create({ memoryMb: 256 });
    await moving.exec(['bash', '-c', 'echo kept > /root/file']);
    await moving.spawnBackground(COUNTER);
    await waitFor(async () => Number((await moving.exec(['cat', '/tmp/count'])).stdout) > 2, 10_000, 'counting');
    await moving.spawnBackground(TCP_SERVER);
    await waitFor(async () => (await moving.exec(['bash', '-c', 'exec 3<>/dev/tcp/127.0.0.1/7070'])).exitCode === 0, 10_000, 'the TCP server');
    await moving.spawnBackground(TCP_CLIENT);
    const lines = async () => Number((await moving.exec(['cat', '/tmp/tcp-lines'])).stdout);
    await waitFor(async () => (await lines()) > 2, 10_000, 'lines over the connection');
    const early = await moving.snapshot({ name: 'early' });
    const m = await clients[1]!.nodes.migrate(moving.id, 'node-a');
    assert.equal(m.to, 'node-a');
    assert.equal(m.sandbox.state, 'running');
    const before = Number((await moving.exec(['cat', '/tmp/count'])).stdout);
    await waitFor(async () => Number((await moving.exec(['cat', '/tmp/count'])).stdout) > before + 2, 10_000, 'still counting after the move');
    const linesAfter = await lines();
    await waitFor(async () => (await lines()) > linesAfter + 2, 10_000, 'lines still coming over the same connection');
    assert.equal((await moving.exec(['cat', '/tmp/tcp-accepts'])).stdout, '2', 'one connection: the probe, then the client, none redialled');
    assert.equal((await moving.exec(['test', '-e', '/tmp/tcp-broken'])).exitCode, 1, 'the client saw no error');
    assert.equal((await moving.exec(['cat', '/root/file'])).stdout, 'kept\n');
    assert.equal((await clients[0]!.nodes.list()).find((n) => n.id === 'node-a')?.sandboxes, 1);
    assert.ok((await moving.timeline()).some((t) => t.id === early.id), 'the older snapshot followed');
    await assert.rejects(clients[1]!.nodes.migrate(moving.id, 'node-a'), (e: unknown) => e instanceof ForkdError && e.code === 'INVALID_ARGUMENT');
  });

  test("a snapshot on a full node forks onto another node", async () => {
    const snap = await moving.snapshot({ name: 'to-fork' });
    const at = Number((await moving.exec(['cat', '/tmp/count'])).stdout);
    const [fork] = await clients[0]!.snapshots.fork(snap.id);
    assert.ok(fork);
    const nodes = await clients[0]!.nodes.list();
    assert.equal(nodes.find((n) => n.id === 'node-a')?.sandboxes, 1, 'node-a had no room for it');
    assert.equal((await fork.exec(['cat', '/root/file'])).stdout, 'kept\n');
    await waitFor(async () => Number((await fork.exec(['cat', '/tmp/count'])).stdout) > at, 10_000, 'the fork counts on from the snapshot');
    await fork.delete();
  });

  test('draining a node moves its sandboxes off; it takes no new ones; a node holding sandboxes cannot be removed', async () => {
    const r = await clients[0]!.nodes.drain('node-a');
    assert.deepEqual(r.failed, []);
    assert.deepEqual(r.moved.map((m) => m.sandbox.id), [moving.id]);
    const before = Number((await moving.exec(['cat', '/tmp/count'])).stdout);
    await waitFor(async () => Number((await moving.exec(['cat', '/tmp/count'])).stdout) > before, 10_000, 'counting after the drain');
    const made = [];
    for (let i = 0; i < 2; i++) made.push(await clients[0]!.sandboxes.create({ memoryMb: 128 }));
    const a = (await clients[0]!.nodes.list()).find((n) => n.id === 'node-a')!;
    assert.equal(a.state, 'draining');
    assert.equal(a.sandboxes, 0);
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

  test('a node killed is marked lost; its sandboxes come back on a survivor from their last export, with the time lost in their log', async () => {
    const s = await clients[1]!.sandboxes.get(moving.id);
    await s.exec(['bash', '-c', 'echo exported > /root/state']);
    const last = await s.snapshot({ name: 'before-the-loss' });
    // The control planes export every 2 s (incremental); wait for this snapshot's manifest in the shared store.
    const blobs = await DirBlobStore.open(join(cpDir, 'blobs'));
    await waitFor(() => blobs.has(`snapshots/${last.id}/manifest.json`), 60_000, 'the snapshot exported');
    await new Promise((r) => setTimeout(r, 1000));
    // The node holding it now (the drain moved it off node-a).
    const where = (await clients[1]!.nodes.list()).find((n) => n.sandboxes > 0 && n.id !== 'node-a')!.id;
    lostNode = where;
    await stopDaemonProcess(nodes.get(where)!.proc);
    await waitFor(async () => (await clients[1]!.nodes.list()).find((n) => n.id === where)?.state === 'lost', 30_000, `${where} marked lost`);
    const back = await waitFor(async () => {
      try {
        const r = await (await clients[1]!.sandboxes.get(moving.id)).exec(['cat', '/root/state']);
        return r.stdout;
      } catch {
        return undefined;
      }
    }, 60_000, 'restored on a survivor');
    assert.equal(back, 'exported\n');
    const log = await clients[1]!.audit.list({ sandbox: moving.id });
    assert.ok(log.some((r) => r.operation === 'recover' && r.code === 'OK' && /lost/.test(r.target ?? '')), JSON.stringify(log.slice(-3)));
  });

  test('the lost node comes back on its pool: its stale copy stops, its snapshots join the timeline where the sandbox lives now, and the copy is deleted', async () => {
    const where = lostNode!;
    const n = nodes.get(where)!;
    const before = await (await clients[1]!.sandboxes.get(moving.id)).timeline();
    assert.ok(!before.some((t) => t.name === 'early'), 'restored from its last export alone');
    // Restarted on the same pool: crash recovery brings its copy of the sandbox back, then the control plane reconciles.
    n.proc = await startNodeProcess(n.env, n.wrap);
    await waitFor(async () => (await clients[1]!.nodes.list()).find((x) => x.id === where)?.state === 'active', 60_000, `${where} reconciled and active again`);
    const res = await fetchTls(`${n.proc.url}/node/v1/sandboxes`, { headers: { authorization: `Bearer ${n.proc.token}` } });
    const held = ((await res.json()) as { sandboxes: { id: string }[] }).sandboxes.map((s) => s.id);
    assert.ok(!held.includes(moving.id), 'the stale copy is deleted on the returned node');
    const s = await clients[1]!.sandboxes.get(moving.id);
    assert.equal(s.info.state, 'running', 'the live copy runs on');
    assert.equal((await s.exec(['cat', '/root/state'])).stdout, 'exported\n');
    const after = await s.timeline();
    assert.ok(after.some((t) => t.name === 'early'), 'the stale copy\'s older snapshots joined the timeline');
    assert.ok(after.some((t) => t.reason === 'pause' && !before.some((b) => b.id === t.id)), 'with the snapshot of its pause: what it ran to');
    assert.equal(new Set(after.map((t) => t.id)).size, after.length);
    const log = await clients[1]!.audit.list({ sandbox: moving.id });
    assert.ok(log.some((r) => r.operation === 'recover' && r.code === 'OK' && /stale copy/.test(r.target ?? '')), JSON.stringify(log.slice(-3)));
    const metrics = await (await fetchTls(`${cps[1]!.url}/metrics`, { headers: { authorization: `Bearer ${cps[1]!.apiKey}` } })).text();
    assert.match(metrics, /^forkd_fleet_returned_sandboxes_total\{outcome="merged"\} 1$/m);
    assert.match(metrics, /^forkd_fleet_returned_nodes_total 1$/m);
  });
});
