import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { silentLogger } from '../../shared/logger.js';
import { createTestNode, type TestNode } from '../../testing/test-node.js';
import { makeRuntime, runcOptions } from '../drivers.js';
import { pickIdRange } from '../manager/id-ranges.js';
import { NetnsNetwork } from '../network/netns-network.js';
import { poolLayout } from '../storage/pool-layout.js';
import { RuncRuntime } from './runc-runtime.js';
import type { RuncOptions } from './runc-options.js';
import type { RuntimeHarness } from './runtime-conformance.js';
import { rootDirectory } from './sandbox-root.js';

/**
 * RuncRuntime (runc, forkd's CRIU and its action script) beside a test node
 * that gives it a pool, the base root and the node's own config. Its init is
 * a shell that picks a value at start, keeps it in memory only, and writes it
 * to /tmp/forkd-conformance on SIGUSR1: what a restore brings back is read
 * from there. `options`: the runtime made from changed options (a tool of the
 * test's own) instead of the node's (stamped) one.
 */

// Its stdio reopened inside, as the guest agent does (CRIU cannot dump the host's /dev/null it is given; runc
// reopens it only in a /dev of its own, not in the root's: see oci-spec.ts devMounts).
const INIT = `#!/bin/sh
exec </dev/null >/dev/null 2>&1
v=$(cat /proc/sys/kernel/random/uuid)
trap 'echo "$v" > /tmp/forkd-conformance' USR1
while :; do sleep 3600 & wait $!; done
`;

const OUT = 'tmp/forkd-conformance';

export async function openRuncHarness(options?: (o: RuncOptions, node: TestNode) => Promise<RuncOptions>): Promise<RuntimeHarness> {
  const node: TestNode = await createTestNode();
  const network = new NetnsNetwork(join(node.config.runDir, 'netns'), node.config.net);
  const runtime = options ? new RuncRuntime(await options(runcOptions(node.config, network), node)) : makeRuntime(node.config, network);
  await runtime.prepareHost(silentLogger);
  const init = join(node.dir, 'conformance-init');
  await writeFile(init, INIT, { mode: 0o755 });
  const volume = (key: string) => poolLayout.sandbox(key);
  const guests = runtime.guests({ root: (key) => node.storage.root(volume(key), runtime.rootKind), guestBinary: init, deadlineMs: 10_000 });
  const scratch = join(node.config.pool.mountPoint, 'conformance');
  let n = 0;
  return {
    runtime,
    network,
    async root(key) {
      await node.storage.prepare(volume(key), node.templates.volume('base'));
      await guests.prepareRoot(key, { install: true });
      return node.storage.root(volume(key), runtime.rootKind);
    },
    frozenCommit: (key, snapKey) => node.storage.frozenCommit(snapKey, volume(key)),
    async rootFrom(key, snapKey) {
      await node.storage.remove(volume(key));
      await node.storage.prepare(volume(key), snapKey);
      await guests.prepareRoot(key, { install: false });
      // What the source's init wrote before its checkpoint must not pass for the restored one's answer.
      await rm(join(node.storage.path(volume(key)), OUT), { force: true });
      return node.storage.root(volume(key), runtime.rootKind);
    },
    async dir() {
      const d = join(scratch, `d-${++n}`);
      await mkdir(d, { recursive: true, mode: 0o700 });
      return d;
    },
    hostLinks: () => readdir('/sys/class/net'),
    idmap: node.config.userns ? { hostId: pickIdRange(new Set()), size: 65536 } : undefined,
    async memory(key) {
      const out = join(rootDirectory(node.storage.root(volume(key), runtime.rootKind)), OUT);
      await rm(out, { force: true });
      const { pid } = await runtime.state(key);
      for (let i = 0; i < 3000; i++) {
        // Again every 200 ms: a PID 1 drops a signal it has no handler for yet (a start just made, its trap not set).
        if (i % 20 === 0) process.kill(pid, 'SIGUSR1');
        const v = (await readFile(out, 'utf8').catch(() => '')).trim();
        if (v) return v;
        await sleep(10);
      }
      const proc = async (f: string) => (await readFile(`/proc/${pid}/${f}`, 'utf8').catch(() => '?')).trim();
      throw new Error(`the init of ${key} (pid ${pid}) did not answer SIGUSR1: ${(await proc('status')).split('\n').filter((l) => /^(State|SigPnd|ShdPnd|SigBlk|SigCgt)/.test(l)).join(', ')}, wchan ${await proc('wchan')}`);
    },
    async killInit(key) {
      process.kill((await runtime.state(key)).pid, 'SIGKILL');
    },
    async close() {
      for (const id of await runtime.list()) await runtime.destroy(id).catch(() => {});
      // Its resolver and proxy (started by the egress test) would keep the process alive.
      await network.close();
      await node.dispose();
    },
  };
}
