import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '../shared/exec.js';

/** A node's own network namespace on the fleet's test network. */
export interface NodeNamespace {
  /** Its address on the bridge (what it listens on and advertises). */
  ip: string;
  /** Runs a command inside it: prepend to argv (nsenter joins only the network namespace, not the mount one). */
  wrap: string[];
}

export interface FleetNetwork {
  /** The host's address on the bridge: control planes listen there, nodes reach them there. */
  hostIp: string;
  nodes: NodeNamespace[];
  close(): Promise<void>;
}

/**
 * A test fleet's network: a bridge on the host (198.19.<k>.1/24, a block
 * reserved for benchmarks, never routed) and one network namespace per
 * node with a veth on it, so each node process has its own addresses,
 * loopback, nftables and sandbox links, and reaches the control planes only
 * through the bridge. Nothing leaves the host.
 */
export async function startFleetNetwork(count: number): Promise<FleetNetwork> {
  const tag = randomBytes(2).toString('hex');
  const k = parseInt(tag, 16) % 250;
  const bridge = `ffb${tag}`;
  const dir = await mkdtemp(join(tmpdir(), 'forkd-fleetnet-'));
  const hostIp = `198.19.${k}.1`;
  const nodes: NodeNamespace[] = [];
  const netnsFiles: string[] = [];
  const close = async () => {
    await exec('ip', ['link', 'del', bridge], { allowFailure: true });
    for (const f of netnsFiles) await exec('umount', [f], { allowFailure: true });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await exec('ip', ['-batch', '-'], { input: [`link add ${bridge} type bridge`, `addr add ${hostIp}/24 dev ${bridge}`, `link set ${bridge} up`].join('\n') + '\n' });
    for (let i = 0; i < count; i++) {
      const netns = join(dir, `node-${i}`);
      netnsFiles.push(netns);
      await writeFile(netns, '');
      await exec('unshare', [`--net=${netns}`, 'true']);
      const veth = `ffv${tag}${i}`;
      const ip = `198.19.${k}.${10 + i}`;
      await exec('ip', ['link', 'add', veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', netns]);
      await exec('ip', ['-batch', '-'], { input: [`link set ${veth} master ${bridge}`, `link set ${veth} up`].join('\n') + '\n' });
      await exec('nsenter', [`--net=${netns}`, 'ip', '-batch', '-'], { input: ['link set lo up', `addr add ${ip}/24 dev eth0`, 'link set eth0 up'].join('\n') + '\n' });
      nodes.push({ ip, wrap: ['nsenter', `--net=${netns}`] });
    }
    return { hostIp, nodes, close };
  } catch (err) {
    await close();
    throw err;
  }
}
