import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { exec } from '../shared/exec.js';
import type { Logger } from '../shared/logger.js';
import type { NodeStats } from '../node-contract/node-types.js';
import { MemoryFleetStore } from '../testing/memory-fleet-store.js';
import { testCipher } from '../testing/test-cipher.js';
import { RegisteredNodes } from './registered-nodes.js';
import type { NodeClient } from './node-directory.js';
import { inClusterApi, kubernetesApi } from './kubernetes-api.js';
import { kubernetesDiscoveryConfig, parsePodList, startKubernetesDiscovery } from './kubernetes-nodes.js';
import { nodePod, podList } from './kubernetes-test-pods.js';

const GB = 1024 ** 3;
const O = { daemonSet: 'forkd-node', port: 8787, scheme: 'http' } as const;

test('parsePodList: ready pods of the DaemonSet are nodes named by their Kubernetes node; the rest are not', () => {
  const r = parsePodList(
    podList([
      nodePod('forkd-node-b2', 'node-b', '10.0.0.2'),
      nodePod('forkd-node-a1', 'node-a', '10.0.0.1'),
      nodePod('forkd-node-a0', 'node-a', '10.0.0.9', { ready: false }),
      nodePod('forkd-node-c', 'node-c', '10.0.0.3', { phase: 'Pending' }),
      nodePod('forkd-node-d', 'node-d', '10.0.0.4', { deleting: true }),
      nodePod('impostor', 'node-e', '10.0.0.5', { owner: 'something-else' }),
      nodePod('forkd-node-f', 'Node_F', '10.0.0.6'),
      nodePod('forkd-node-g', 'node-g', 'not-an-ip'),
      nodePod('forkd-node-v6', 'node-v6', 'fd00::7'),
      { metadata: { name: 7 } },
    ]),
    O,
  );
  assert.deepEqual(r, {
    ok: true,
    nodes: [
      { id: 'node-a', url: 'http://10.0.0.1:8787', pod: 'forkd-node-a1' },
      { id: 'node-b', url: 'http://10.0.0.2:8787', pod: 'forkd-node-b2' },
      { id: 'node-v6', url: 'http://[fd00::7]:8787', pod: 'forkd-node-v6' },
    ],
  });
  assert.equal(parsePodList({ kind: 'Status', status: 'Failure' }, O).ok, false);
  assert.equal(parsePodList(null, O).ok, false);
});

test('kubernetesDiscoveryConfig: off by default, defaults for the manifests, bad values refused', () => {
  assert.equal(kubernetesDiscoveryConfig({}), undefined);
  assert.equal(kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'heartbeat' }), undefined);
  assert.deepEqual(kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'kubernetes' }), { selector: 'app.kubernetes.io/name=forkd,app.kubernetes.io/component=node', port: 8787, scheme: 'http', daemonSet: 'forkd-node', serviceAccountDir: '/var/run/secrets/kubernetes.io/serviceaccount' });
  assert.throws(() => kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'dns' }), /FORKD_NODE_DISCOVERY/);
  assert.throws(() => kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'kubernetes', FORKD_KUBERNETES_NODE_SELECTOR: 'a in (b)' }), /SELECTOR/);
  assert.throws(() => kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'kubernetes', FORKD_KUBERNETES_NODE_PORT: '70000' }), /PORT/);
  assert.throws(() => kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'kubernetes', FORKD_KUBERNETES_NODE_SCHEME: 'ftp' }), /SCHEME/);
});

/** An API server on loopback answering the pod list as Kubernetes does, checking the bearer token and the selector. */
async function fakeApiServer(serve: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; close(): Promise<void> }> {
  const server = createHttpServer(serve);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, close: () => new Promise((r) => server.close(() => r())) };
}

function podsAnswer(pods: () => unknown, tokens: () => string) {
  return (req: IncomingMessage, res: ServerResponse) => {
    const u = new URL(req.url ?? '/', 'http://x');
    if (req.headers.authorization !== `Bearer ${tokens()}`) return res.writeHead(401, { 'content-type': 'application/json' }).end('{"kind":"Status","code":401}');
    if (u.pathname !== '/api/v1/namespaces/forkd/pods' || u.searchParams.get('labelSelector') !== 'app.kubernetes.io/name=forkd,app.kubernetes.io/component=node') return res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(pods()));
  };
}

/** A node holding no sandboxes yet (one that does starts lost until reconciled: returned-nodes.test.ts). */
function fakeNode(free: number, fail = false): NodeClient {
  const stats: NodeStats = { snapshots: 0, snapshotBytes: 0, poolUsedBytes: GB, poolSizeBytes: 64 * GB, warmPoolHeld: 0, handlerFaults: {}, memoryCapBytes: 16 * GB, memoryCommittedBytes: 16 * GB - free, cpus: 4, running: 0, paused: 0 };
  return { stats: async () => (fail ? Promise.reject(new Error('connection refused')) : stats), templates: async () => [{ name: 'base' }], close() {} } as unknown as NodeClient;
}

function recordingLogger(): Logger & { warned: string[] } {
  const warned: string[] = [];
  return { warned, debug() {}, info() {}, error() {}, warn: (msg: string) => void warned.push(msg) } as Logger & { warned: string[] };
}

test('discovery: the node pods listed by the API server become fleet nodes with their capacity; silent or gone ones stop being refreshed', async () => {
  let pods = [nodePod('forkd-node-1', 'node-a', '10.0.0.1'), nodePod('forkd-node-2', 'node-b', '10.0.0.2'), nodePod('forkd-node-3', 'node-c', '10.0.0.3', { ready: false })];
  let token = 'sa-token-1';
  const api = await fakeApiServer(podsAnswer(() => podList(pods), () => token));
  const store = new MemoryFleetStore();
  const nodes = new RegisteredNodes({ store, cipher: testCipher(), deadlineMs: 60_000, connect: () => fakeNode(0) });
  const connected: string[] = [];
  const logger = recordingLogger();
  let tokenReads = 0;
  const d = startKubernetesDiscovery({
    api: kubernetesApi({ url: api.url, namespace: 'forkd', token: async () => (tokenReads++, token) }),
    nodes,
    token: 'fnt_shared',
    connect: (url, t) => {
      assert.equal(t, 'fnt_shared');
      connected.push(url);
      return fakeNode(url.includes('10.0.0.1') ? 8 * GB : 2 * GB, url.includes('10.0.0.2') && pods.length === 1);
    },
    ...kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'kubernetes' })!,
    everyMs: 3_600_000,
    logger,
  });
  try {
    await d.round();
    const recs = await store.listNodes();
    assert.deepEqual(recs.map((n) => [n.id, n.url, n.capacity.memoryFreeBytes, n.state]), [
      ['node-a', 'http://10.0.0.1:8787', 8 * GB, 'active'],
      ['node-b', 'http://10.0.0.2:8787', 2 * GB, 'active'],
    ]);
    assert.deepEqual(recs[0]!.capacity.templates, ['base']);
    assert.deepEqual(connected.sort(), ['http://10.0.0.1:8787', 'http://10.0.0.2:8787']);
    // The token file is read for every call (a rotated token is picked up); the node token is sealed like a heartbeat's.
    token = 'sa-token-2';
    const seen = (await store.node('node-a'))!.lastSeenAt;
    await new Promise((r) => setTimeout(r, 5));
    await d.round();
    assert.ok((await store.node('node-a'))!.lastSeenAt > seen);
    assert.ok(tokenReads >= 2);
    assert.equal(connected.length, 2, 'clients are kept between rounds');
    // A pod that went away is not refreshed; its record stays for the deadlines to judge.
    const seenB = (await store.node('node-b'))!.lastSeenAt;
    pods = [pods[0]!];
    await d.round();
    assert.equal((await store.node('node-b'))!.lastSeenAt, seenB);
    assert.deepEqual(logger.warned, []);
    // An API server that refuses the token: logged once, nothing recorded, no throw.
    token = 'another';
    const api2 = kubernetesApi({ url: api.url, namespace: 'forkd', token: async () => 'wrong' });
    const d2 = startKubernetesDiscovery({ api: api2, nodes, token: 'fnt_shared', connect: () => fakeNode(0), ...kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'kubernetes' })!, everyMs: 3_600_000, logger });
    await d2.round();
    await d2.round();
    d2.stop();
    assert.deepEqual(logger.warned, ['cannot list the node pods']);
  } finally {
    d.stop();
    nodes.close();
    await api.close();
  }
});

test('discovery: a node pod that refuses or hangs is logged once and the others are still recorded; garbage from the API server is not a crash', async () => {
  let answer: () => string = () => JSON.stringify(podList([nodePod('p1', 'node-a', '10.0.0.1'), nodePod('p2', 'node-b', '10.0.0.2')]));
  const api = await fakeApiServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(answer()));
  const store = new MemoryFleetStore();
  const nodes = new RegisteredNodes({ store, cipher: testCipher(), deadlineMs: 60_000 });
  const logger = recordingLogger();
  // node-b refuses, node-c never answers.
  const connect = (url: string) => (url.includes('10.0.0.3') ? ({ stats: () => new Promise(() => {}), templates: async () => [], close() {} } as unknown as NodeClient) : fakeNode(GB, url.includes('10.0.0.2')));
  const d = startKubernetesDiscovery({ api: kubernetesApi({ url: api.url, namespace: 'forkd', token: async () => 't' }), nodes, token: 'fnt_x', connect, ...kubernetesDiscoveryConfig({ FORKD_NODE_DISCOVERY: 'kubernetes' })!, everyMs: 3_600_000, pollTimeoutMs: 200, logger });
  try {
    answer = () => JSON.stringify(podList([nodePod('p1', 'node-a', '10.0.0.1'), nodePod('p2', 'node-b', '10.0.0.2'), nodePod('p3', 'node-c', '10.0.0.3')]));
    await d.round();
    await d.round();
    assert.deepEqual((await store.listNodes()).map((n) => n.id), ['node-a']);
    assert.deepEqual(logger.warned, ['node pod does not answer', 'node pod does not answer']);
    for (const garbage of ['not json', '{"kind":"PodList","items":"x"}', '[]', JSON.stringify({ kind: 'PodList', items: [{ metadata: { name: 'p', ownerReferences: 5 } }] })]) {
      answer = () => garbage;
      await d.round();
    }
    assert.deepEqual(logger.warned, ['node pod does not answer', 'node pod does not answer', 'cannot list the node pods']);
  } finally {
    d.stop();
    await api.close();
  }
});

test('inClusterApi: the service account files and KUBERNETES_SERVICE_HOST, over HTTPS verified against the mounted CA', async () => {
  await assert.rejects(inClusterApi({}, '/nonexistent'), { code: 'FAILED_PRECONDITION' });
  const dir = await mkdtemp(join(tmpdir(), 'forkd-sa-'));
  try {
    await assert.rejects(inClusterApi({ KUBERNETES_SERVICE_HOST: '127.0.0.1' }, dir), { code: 'FAILED_PRECONDITION' });
    await exec('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=kubernetes', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'ca.crt')]);
    await writeFile(join(dir, 'namespace'), 'forkd\n');
    await writeFile(join(dir, 'token'), 'sa-token\n');
    const [cert, key] = [await readFile(join(dir, 'ca.crt')), await readFile(join(dir, 'key.pem'))];
    const server = createHttpsServer({ cert, key }, podsAnswer(() => podList([nodePod('p1', 'node-a', '10.0.0.1')]), () => 'sa-token'));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const env = { KUBERNETES_SERVICE_HOST: '127.0.0.1', KUBERNETES_SERVICE_PORT: String((server.address() as AddressInfo).port) };
      const api = await inClusterApi(env, dir);
      assert.equal(api.namespace, 'forkd');
      const json = await api.get('/api/v1/namespaces/forkd/pods?labelSelector=app.kubernetes.io%2Fname%3Dforkd%2Capp.kubernetes.io%2Fcomponent%3Dnode');
      assert.deepEqual(parsePodList(json, O), { ok: true, nodes: [{ id: 'node-a', url: 'http://10.0.0.1:8787', pod: 'p1' }] });
      await assert.rejects(api.get('/api/v1/namespaces/other/pods'), { code: 'NOT_FOUND' });
      // Another CA: the API server is not trusted.
      await exec('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1', '-subj', '/CN=other', '-keyout', join(dir, 'key2.pem'), '-out', join(dir, 'ca.crt')]);
      const untrusting = await inClusterApi(env, dir);
      await assert.rejects(untrusting.get('/api/v1/namespaces/forkd/pods'), { code: 'UNAVAILABLE' });
    } finally {
      await new Promise((r) => server.close(r));
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
