import { mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient, ForkdError } from '@forkd/sdk';
import { startDaemonProcess, startNodeProcess, stopDaemonProcess, type DaemonProcess, type NodeProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { waitFor } from '../testing/helpers.js';
import { makeTestCertificate } from '../testing/tls-test-ca.js';
import { nodePod, podList } from '../fleet/kubernetes-test-pods.js';

/**
 * Node discovery through the Kubernetes API, for real but the cluster: a
 * `forkd serve --role node` answering the shared node token, an API server
 * on loopback (HTTPS, its own CA mounted as the service account's) listing
 * it as a pod of the node DaemonSet, and a `forkd serve --role
 * control-plane` with FORKD_NODE_DISCOVERY=kubernetes that finds it there
 * and serves sandboxes on it. A pod that leaves the list is not refreshed:
 * after the deadline its node takes no new work.
 */
describe('node discovery through the Kubernetes API (real daemons, a fake API server)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let node: NodeProcess | undefined;
  let api: DaemonProcess | undefined;
  let listed = true;
  let kube: ReturnType<typeof createServer> | undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-kube-'));
    cfg = testConfig(dir);
    const tokenFile = join(dir, 'shared-node.token');
    await writeFile(tokenFile, `fnt_${randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
    node = await startNodeProcess({ ...cfg.env, FORKD_NODE_TOKEN_FILE: tokenFile });
    const nodePort = new URL(node.url).port;
    const sa = join(dir, 'serviceaccount');
    await mkdir(sa);
    const tls = await makeTestCertificate(sa);
    await writeFile(join(sa, 'ca.crt'), tls.cert);
    await writeFile(join(sa, 'namespace'), 'forkd\n');
    await writeFile(join(sa, 'token'), 'sa-token\n');
    kube = createServer({ cert: tls.cert, key: await readFile(tls.keyFile) }, (req, res) => {
      const u = new URL(req.url ?? '/', 'https://x');
      if (req.headers.authorization !== 'Bearer sa-token' || u.pathname !== '/api/v1/namespaces/forkd/pods') return res.writeHead(403).end();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(podList(listed ? [nodePod('forkd-node-x1', 'node-a', '127.0.0.1')] : [])));
    });
    await new Promise<void>((r) => kube!.listen(0, '127.0.0.1', r));
    const cpState = join(dir, 'control-plane');
    await mkdir(cpState, { mode: 0o700 });
    api = await startDaemonProcess({
      ...cfg.env,
      FORKD_STATE_DIR: cpState,
      FORKD_ROLE: 'control-plane',
      FORKD_NODE_DISCOVERY: 'kubernetes',
      KUBERNETES_SERVICE_HOST: '127.0.0.1',
      KUBERNETES_SERVICE_PORT: String((kube.address() as AddressInfo).port),
      FORKD_KUBERNETES_SERVICE_ACCOUNT_DIR: sa,
      FORKD_KUBERNETES_NODE_PORT: nodePort,
      FORKD_NODE_TOKEN_FILE: tokenFile,
      FORKD_HEARTBEAT_S: '1',
      FORKD_NODE_DEADLINE_S: '3',
    });
  });
  after(async () => {
    await stopDaemonProcess(api, 'SIGTERM');
    await stopDaemonProcess(node, 'SIGTERM');
    await new Promise((r) => (kube ? kube.close(r) : r(undefined)));
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('the node pod is found, polled for its capacity and serves sandboxes; once it leaves the list it takes no new work', async () => {
    const forkd = new ForkdClient({ url: api!.url, apiKey: api!.apiKey });
    const nodes = await waitFor(async () => {
      const all = await forkd.nodes.list();
      return all.some((n) => n.id === 'node-a' && n.state === 'active') ? all : undefined;
    }, 20_000, 'node-a in the fleet');
    assert.equal(nodes.find((n) => n.id === 'node-a')!.url, node!.url);
    const sbx = await forkd.sandboxes.create({ memoryMb: 256 });
    assert.equal((await sbx.exec(['sh', '-c', 'echo found'])).stdout, 'found\n');
    await sbx.delete();
    listed = false;
    await waitFor(async () => {
      try {
        await (await forkd.sandboxes.create({ memoryMb: 256 })).delete();
        return false;
      } catch (err) {
        return err instanceof ForkdError && (err.code === 'UNAVAILABLE' || err.code === 'RESOURCE_EXHAUSTED');
      }
    }, 20_000, 'no node to take work');
  });
});
