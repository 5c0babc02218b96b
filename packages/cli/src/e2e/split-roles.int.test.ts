import { mkdtemp, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient, ForkdError } from '@forkd/sdk';
import { disposeNodeDir, isRoot, startDaemonProcess, startNodeProcess, stopDaemonProcess, testConfig, type DaemonProcess, type NodeProcess } from '@forkd/server/testing';

/**
 * The seam between control plane and node, used for real: `forkd serve
 * --role node` owns the sandboxes, `forkd serve --role control-plane` (its
 * own state dir: keys, owners, audit) serves the API over it through the
 * node contract over HTTP. The SDK cannot tell it from one process.
 */
describe('control plane and node in two processes (real daemons)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let node: NodeProcess | undefined;
  let api: DaemonProcess | undefined;
  let forkd: ForkdClient;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-split-'));
    cfg = testConfig(dir);
    node = await startNodeProcess(cfg.env);
    const cpState = join(dir, 'control-plane');
    await mkdir(cpState, { mode: 0o700 });
    api = await startDaemonProcess({ ...cfg.env, FORKD_STATE_DIR: cpState, FORKD_ROLE: 'control-plane', FORKD_NODE_URL: node.url, FORKD_NODE_TOKEN_FILE: join(cfg.config.stateDir, 'node.token') });
    forkd = new ForkdClient({ url: api.url, apiKey: api.apiKey });
  });
  after(async () => {
    await stopDaemonProcess(api, 'SIGTERM');
    await stopDaemonProcess(node, 'SIGTERM');
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('create, exec, files, snapshot, fork and delete through the remote node; tenancy and audit on the control plane', async () => {
    const { key } = await forkd.keys.create({ tenant: 'acme' });
    const acme = new ForkdClient({ url: api!.url, apiKey: key });
    const sbx = await acme.sandboxes.create({ memoryMb: 256 });
    const r = await sbx.exec(['bash', '-c', 'echo "$(hostname) ok"; exit 3']);
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, `${sbx.id} ok\n`);
    await sbx.files.write('/tmp/a.txt', 'over two hops');
    assert.equal(new TextDecoder().decode(await sbx.files.read('/tmp/a.txt')), 'over two hops');
    const snap = await sbx.snapshot({ name: 'two-hops' });
    const [child] = await acme.snapshots.fork(snap.id, { count: 1 });
    assert.ok(child);
    assert.equal(new TextDecoder().decode(await child.files.read('/tmp/a.txt')), 'over two hops');
    // Ownership is the control plane's: another tenant sees none of it, whatever the node holds.
    const { key: other } = await forkd.keys.create({ tenant: 'beta' });
    const beta = new ForkdClient({ url: api!.url, apiKey: other });
    assert.deepEqual((await beta.sandboxes.list()).map((s) => s.id), []);
    await assert.rejects(beta.sandboxes.get(sbx.id), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    // Errors of the node keep their code across both hops.
    await assert.rejects(sbx.exec(['/nope']), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    const ops = (await acme.audit.list({ sandbox: sbx.id })).map((a) => a.operation);
    assert.ok(ops.includes('POST /v1/sandboxes/:id/exec'), ops.join(', '));
    await child.delete();
    await sbx.delete();
    await assert.rejects(acme.sandboxes.get(sbx.id), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  });

  test('a control plane with a wrong node token does not start (its callers would see their own key refused)', async () => {
    const cpState = join(dir, 'control-plane-wrong');
    await mkdir(cpState, { mode: 0o700 });
    const tokenFile = join(cpState, 'node.token');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(tokenFile, 'fnt_wrong\n', { mode: 0o600 });
    await assert.rejects(
      startDaemonProcess({ ...cfg.env, FORKD_STATE_DIR: cpState, FORKD_ROLE: 'control-plane', FORKD_NODE_URL: node!.url, FORKD_NODE_TOKEN_FILE: tokenFile }),
      /does not answer this control plane/,
    );
  });
});
