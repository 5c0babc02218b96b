import { readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { cgroupDirs } from '../node/cgroups/cgroups.js';
import { NetnsNetwork } from '../node/network/netns-network.js';
import type { ForkdConfig } from '../shared/config.js';
import { waitFor } from './helpers.js';

/** Host pids of every task in every sandbox cgroup below `parent`. */
async function sandboxTasks(parent: string): Promise<number[]> {
  const dir = cgroupDirs(parent).pids;
  const pids: number[] = [];
  for (const e of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    if (!e.isDirectory()) continue;
    const procs = await readFile(join(dir, e.name, 'cgroup.procs'), 'utf8').catch(() => '');
    pids.push(...procs.split('\n').filter(Boolean).map(Number));
  }
  return pids;
}

/**
 * What a power loss does to sandboxes: every process of every sandbox
 * SIGKILLed at once (nothing gets to clean up), until their cgroups are empty.
 */
export async function killAllSandboxProcesses(cgroupParent: string): Promise<void> {
  await waitFor(
    async () => {
      const pids = await sandboxTasks(cgroupParent);
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          /* gone already */
        }
      }
      return pids.length === 0;
    },
    10_000,
    'every sandbox process to die',
  );
}

/**
 * The rest of a reboot: /run is a tmpfs, so runc's state and the network
 * namespaces' bind mounts are gone (the pool, the database and the bundles
 * under the state dir stay).
 */
export async function forgetRuntimeState(config: ForkdConfig): Promise<void> {
  const netns = new NetnsNetwork(join(config.runDir, 'netns'));
  for (const id of await netns.list()) await netns.release(id);
  await netns.endHolder();
  await rm(join(config.runDir, 'runc'), { recursive: true, force: true });
}
