import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtimeConformance } from '../node/runtime/runtime-conformance.js';
import { FakeNetwork } from './fake-network.js';
import { FakeRuntime } from './fake-runtime.js';

runtimeConformance('FakeRuntime', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-fake-runtime-'));
  const network = new FakeNetwork();
  const runtime = new FakeRuntime({ network });
  let n = 0;
  const root = async (key: string) => {
    const path = join(dir, 'roots', key);
    await mkdir(path, { recursive: true });
    return { kind: 'directory' as const, path };
  };
  return {
    runtime,
    network,
    root,
    frozenCommit: async () => undefined,
    rootFrom: (key) => root(key),
    dir: async () => {
      const d = join(dir, `d-${++n}`);
      await mkdir(d, { recursive: true });
      return d;
    },
    idmap: { hostId: 2 ** 31, size: 65536 },
    hostLinks: async () => [...network.hostLinks],
    memory: async (key) => runtime.instances.get(key)?.memory ?? '',
    killInit: async (key) => runtime.kill(key),
    close: () => rm(dir, { recursive: true, force: true }),
  };
});
