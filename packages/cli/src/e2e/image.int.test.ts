import { mkdir, mkdtemp } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient } from '@forkd/sdk';
import { exec, installPackages, REPO_ROOT } from '@forkd/server';
import { disposeNodeDir, isRoot, randomPort, startDaemonProcess, stopDaemonProcess, testConfig, waitFor, type DaemonProcess } from '@forkd/server/testing';

const TAG = 'localhost/forkd:test';

/**
 * The image (deploy/Containerfile) as the node DaemonSet runs it: built from
 * this checkout by scripts/build-image.sh, then started privileged on the
 * host's PID namespace and network with a state dir from the host, its own
 * set-up (runc and CRIU from the image) and pool; a control plane on the host
 * drives it over the node contract. Pause and resume go through the image's
 * CRIU, with a process alive across them.
 */
describe('the forkd image as a node (podman)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  const name = `forkd-image-test-${randomBytes(3).toString('hex')}`;
  let api: DaemonProcess | undefined;
  let nodeUrl = '';

  before(async () => {
    // Debian's podman, as the benchmark installs it.
    await installPackages(['podman', 'debootstrap'], () => {});
    await exec('bash', [join(REPO_ROOT, 'scripts/build-image.sh'), TAG], { timeoutMs: 1_800_000 });
    dir = await mkdtemp(join(tmpdir(), 'forkd-image-'));
    cfg = testConfig(dir);
    await mkdir(cfg.config.stateDir, { recursive: true, mode: 0o700 });
    const port = randomPort();
    nodeUrl = `http://127.0.0.1:${port}`;
    const env = Object.entries({ ...cfg.env, FORKD_HOST: '127.0.0.1', FORKD_PORT: String(port) }).filter(([k]) => k.startsWith('FORKD_') && k !== 'FORKD_CACHE_DIR');
    // The container may not raise its file limit above this process's own (no CAP_SYS_RESOURCE here).
    const nofile = (await exec('sh', ['-c', 'ulimit -Hn'])).stdout.trim();
    await exec('podman', [
      'run', '-d', '--name', name, '--privileged', '--pid=host', '--network=host',
      '--ulimit', `nofile=${nofile}:${nofile}`, '--ulimit', 'nproc=4096:4096',
      '-v', `${dir}:${dir}`, '-v', '/sys/fs/cgroup:/sys/fs/cgroup', '-v', '/dev:/dev',
      ...env.flatMap(([k, v]) => ['-e', `${k}=${v}`]),
      TAG, 'serve', '--role', 'node',
    ]);
    const listening = async () => {
      const logs = await exec('podman', ['logs', name], { allowFailure: true });
      if (`${logs.stdout}${logs.stderr}`.includes('"msg":"listening"')) return true;
      // podman is a process of its own per look: not every 50 ms.
      await new Promise((r) => setTimeout(r, 1000));
      return false;
    };
    await waitFor(listening, 600_000, 'the node in the image to listen');
    const cpState = join(dir, 'control-plane');
    await mkdir(cpState, { mode: 0o700 });
    api = await startDaemonProcess({ ...cfg.env, FORKD_STATE_DIR: cpState, FORKD_ROLE: 'control-plane', FORKD_NODE_URL: nodeUrl, FORKD_NODE_TOKEN_FILE: join(cfg.config.stateDir, 'node.token') });
  });

  after(async () => {
    await stopDaemonProcess(api, 'SIGTERM');
    if (isRoot) {
      const logs = await exec('podman', ['logs', name], { allowFailure: true });
      if (process.env.FORKD_TEST_VERBOSE) process.stderr.write(logs.stdout + logs.stderr);
      await exec('podman', ['rm', '-f', '-t', '30', name], { allowFailure: true, timeoutMs: 120_000 });
      await exec('podman', ['rmi', TAG], { allowFailure: true });
    }
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('create, exec, pause and resume with a live process, fork and delete on the node in the image', async () => {
    const forkd = new ForkdClient({ url: api!.url, apiKey: api!.apiKey });
    const sbx = await forkd.sandboxes.create({ memoryMb: 256 });
    const r = await sbx.exec(['bash', '-c', 'echo "$(hostname) in the image"; echo 42 > /tmp/x']);
    assert.equal(r.stdout, `${sbx.id} in the image\n`);
    const { pid } = await sbx.spawnBackground(['sleep', '1000']);
    await sbx.pause();
    await sbx.resume();
    assert.ok((await sbx.processes()).some((p) => p.pid === pid), 'the process lives through CRIU from the image');
    const [child] = await sbx.fork();
    assert.ok(child);
    assert.equal((await child.exec(['cat', '/tmp/x'])).stdout, '42\n');
    await child.delete();
    await sbx.delete();
  });
});
