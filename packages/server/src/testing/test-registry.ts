import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { exec, spawnDaemon } from '../shared/exec.js';

/** A registry (Debian's docker-registry, distribution 2.8) of a test's own on loopback, storage in a temporary directory. */
export interface TestRegistry {
  /** `127.0.0.1:<port>`: what image references and FORKD_INSECURE_REGISTRIES name. */
  host: string;
  /** Pushes an OCI layout's tag as `<host>/<name>` (plain HTTP). */
  push(layout: string, tag: string, name: string): Promise<void>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
}

export async function startTestRegistry(): Promise<TestRegistry> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-registry-'));
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const config = join(dir, 'config.yml');
  await writeFile(config, `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/data\nhttp:\n  addr: ${host}\n`);
  let exited = false;
  const pid = spawnDaemon('/usr/bin/docker-registry', ['serve', config], process.env, () => (exited = true));
  const stop = async () => {
    if (!exited && pid) process.kill(pid, 'SIGTERM');
    for (let i = 0; i < 50 && !exited; i++) await sleep(20);
    await rm(dir, { recursive: true, force: true });
  };
  for (let i = 0; ; i++) {
    const ok = await fetch(`http://${host}/v2/`).then((r) => r.status === 200, () => false);
    if (ok) break;
    if (exited || i > 200) {
      await stop();
      throw new Error('the test registry did not start (apt-get install docker-registry, or ./forkd setup)');
    }
    await sleep(25);
  }
  return {
    host,
    async push(layout, tag, name) {
      await exec('skopeo', ['--insecure-policy', 'copy', '--quiet', '--dest-tls-verify=false', `oci:${layout}:${tag}`, `docker://${host}/${name}`], { timeoutMs: 120_000 });
    },
    stop,
  };
}
