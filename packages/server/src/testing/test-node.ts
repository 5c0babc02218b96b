import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { NetnsNetwork } from '../node/network/netns-network.js';
import { heldMounts } from '../node/network/netns-holder.js';
import { join } from 'node:path';
import { loadConfig, type ForkdConfig } from '../shared/config.js';
import { silentLogger, createLogger } from '../shared/logger.js';
import { exec } from '../shared/exec.js';
import { openNode, type Node } from '../node/node.js';
import type { BlobStore } from '../blob/blob-store.js';
import { openBlobStore } from '../blob/blob-store-config.js';
import type { EgressInterceptor } from '../node/network/egress-interceptor.js';
import type { NodeEventSink } from '../node/node-event.js';
import { unmountPool } from '../node/storage/btrfs-pool.js';
import { baseRootfsDir } from '../setup/setup.js';
import { poolLayout } from '../node/storage/pool-layout.js';
import { cgroupDirs } from '../node/cgroups/cgroups.js';
import { processAlive } from './helpers.js';

export const isRoot = process.getuid?.() === 0;

/**
 * A private forkd node for one test file: its own loop-backed Btrfs pool,
 * database, runc root and cgroup parent under a temporary directory, with the
 * `base` template imported from the set-up cache. Nothing is shared with a
 * running daemon or an earlier run; `dispose` removes all of it.
 */
export interface TestNode extends Node {
  dir: string;
  env: NodeJS.ProcessEnv;
  dispose(): Promise<void>;
}

export function testConfig(dir: string): { config: ForkdConfig; env: NodeJS.ProcessEnv } {
  const tag = randomBytes(2).toString('hex');
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    FORKD_STATE_DIR: join(dir, 'state'),
    FORKD_RUN_DIR: join(dir, 'run'),
    FORKD_STAGING_DIR: join('/dev/shm', `${dir.split('/').pop()}-staging`),
    FORKD_POOL_SIZE_GB: '16',
    FORKD_CGROUP_PARENT: `forkd-test-${randomBytes(4).toString('hex')}`,
    FORKD_WARM_POOL: '0',
    // Tests leave the host's IPv4 forwarding as it is (uplink-forwarding.ts has its own tests).
    FORKD_HOST_FORWARDING: 'leave',
    // A node's own nftables table, veth names and host-side addresses (see ForkdConfig.net).
    FORKD_NET_TABLE: `forkdt${tag}`,
    FORKD_NET_IF_PREFIX: `ft${tag}x`,
    FORKD_NET_HOST_NET: `10.${128 + (parseInt(tag, 16) % 120)}`,
    // A 16 GiB pool: the default 8× would admit only 12 sandboxes at the default 10 GiB quota (the scale test makes 50).
    FORKD_DISK_OVERCOMMIT: '64',
    // Off unless a test asks: parallel daemons would all want ports 3000 and 49983.
    FORKD_E2B_API_PORT: 'off',
    FORKD_E2B_ENVD_PORT: 'off',
  };
  recordOwner(dir, env);
  return { config: loadConfig(env), env };
}

const OWNER_RECORD = '.forkd-test-owner.json';

/**
 * Who made a test dir, and its config's random parts: a test file killed at
 * its timeout never disposes its node, and the hundreds of sandboxes one left
 * running slowed every run after it on the machine (CI's included) until
 * sweepStaleTestDirs removes them.
 */
function recordOwner(dir: string, env: NodeJS.ProcessEnv): void {
  const forkdEnv = Object.fromEntries(Object.entries(env).filter(([k]) => k.startsWith('FORKD_')));
  try {
    writeFileSync(join(dir, OWNER_RECORD), JSON.stringify({ pid: process.pid, env: forkdEnv }));
  } catch {
    // A dir that does not exist yet holds nothing to sweep.
  }
}

/** Disposes the test dirs (testConfig's) whose maker died without disposing them, and any daemon still running on one. */
export async function sweepStaleTestDirs(): Promise<void> {
  for (const name of (await readdir(tmpdir()).catch(() => [] as string[])).filter((n) => n.startsWith('forkd-'))) {
    const dir = join(tmpdir(), name);
    const rec = (await readFile(join(dir, OWNER_RECORD), 'utf8').then((t) => JSON.parse(t) as unknown).catch(() => undefined)) as { pid?: unknown; env?: Record<string, string> } | undefined;
    if (typeof rec?.pid !== 'number' || processAlive(rec.pid)) continue;
    // Claimed by a rename: two sweeps never dispose one dir.
    if (!(await rename(join(dir, OWNER_RECORD), join(dir, `${OWNER_RECORD}.sweeping`)).then(() => true, () => false))) continue;
    const config = loadConfig({ ...process.env, ...rec.env });
    const daemon = Number((await readFile(join(config.stateDir, 'node.pid'), 'utf8').catch(() => '')).trim());
    if (daemon > 0 && daemon !== process.pid && processAlive(daemon)) process.kill(daemon, 'SIGKILL');
    await disposeNodeDir(undefined, dir, config).catch(() => {});
  }
}

/** `config`: settings over the test defaults (the density bench's overcommit ratios); `poolSizeGb`: its loop pool's size (default 16). */
export async function createTestNode(
  opts: { verbose?: boolean; warmPool?: number; onEvent?: NodeEventSink; egressInterceptor?: EgressInterceptor; config?: Partial<ForkdConfig>; poolSizeGb?: number; blobs?: BlobStore } = {},
): Promise<TestNode> {
  await sweepStaleTestDirs();
  const dir = await mkdtemp(join(tmpdir(), 'forkd-test-'));
  const { config: base, env } = testConfig(dir);
  const config = { ...base, warmPool: opts.warmPool ?? 0, ...opts.config, ...(opts.poolSizeGb ? { pool: { ...base.pool, sizeBytes: opts.poolSizeGb * 2 ** 30 } } : {}) };
  const rootfs = baseRootfsDir(config);
  if (!existsSync(join(rootfs, '.forkd-recipe'))) throw new Error(`no base root filesystem at ${rootfs}: run ./forkd setup first`);
  const node = await openNode(config, opts.verbose ? createLogger('debug') : silentLogger, { ...(opts.onEvent ? { onEvent: opts.onEvent } : {}), ...(opts.egressInterceptor ? { egressInterceptor: opts.egressInterceptor } : {}), blobs: opts.blobs ?? (await openBlobStore(config.blobStore)) });
  await node.templates.importDir('base', rootfs);
  return {
    ...node,
    dir,
    env,
    async dispose() {
      await disposeNodeDir(node, dir, config);
    },
  };
}

export async function disposeNodeDir(node: Node | undefined, dir: string, config: ForkdConfig): Promise<void> {
  if (node) {
    for (const s of await node.manager.list()) await node.manager.delete(s.id).catch(() => {});
    await node.close();
  } else {
    // A daemon ran on this dir: kill whatever runc still knows about.
    const root = join(config.runDir, 'runc');
    const r = await exec('runc', ['--root', root, 'list', '-q'], { allowFailure: true });
    for (const id of r.stdout.split('\n').filter(Boolean)) await exec('runc', ['--root', root, 'delete', '--force', id], { allowFailure: true });
  }
  const netns = new NetnsNetwork(join(config.runDir, 'netns'), config.net);
  for (const id of await netns.list()) await netns.release(id);
  await netns.dropTable();
  await netns.endHolder();
  // Mounts a killed daemon left under the dir (the runtime's views of sandbox roots): rm must never walk through one.
  for (const m of await mountsUnder(config.runDir)) await exec('umount', ['--lazy', m], { allowFailure: true });
  await unmountPool(config.pool);
  await removeCgroupParent(config.cgroupParent);
  await rm(config.stagingDir, { recursive: true, force: true });
  await rm(dir, { recursive: true, force: true });
}

/** Mount points strictly below `dir` in the host's mount namespace, deepest first. */
export async function mountsUnder(dir: string): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const targets = info.split('\n').map((l) => (l.split(' ')[4] ?? '').replace(/\\040/g, ' ')).filter((t) => t.startsWith(`${dir}/`));
  return [...new Set(targets)].sort((a, b) => b.length - a.length);
}

/** runc removes each sandbox's cgroup; the shared parent is ours to remove. */
export async function removeCgroupParent(parent: string): Promise<void> {
  const d = cgroupDirs(parent);
  const dirs = new Set([d.memory, d.cpu, d.pids, d.freezer]);
  if (!existsSync('/sys/fs/cgroup/cgroup.controllers')) {
    for (const ctrl of await readdir('/sys/fs/cgroup').catch(() => [] as string[])) dirs.add(join('/sys/fs/cgroup', ctrl, parent));
  }
  for (const p of dirs) await rmdir(p).catch(() => {});
}

/** Counts what a sandbox can leak on the host, to compare before and after. */
export async function hostFootprint(node: Node, cgroupParent: string): Promise<{ mounts: number; subvolumes: number; cgroups: number; containers: number; fds: number; guests: number }> {
  // Only mounts a sandbox could leak (under the pool or run dir, or namespace files), so
  // unrelated mount activity on the host does not disturb the count.
  const roots = [node.config.pool.mountPoint, node.config.runDir, node.config.stateDir];
  const mounts = (await readFile('/proc/self/mountinfo', 'utf8'))
    .split('\n')
    .filter((l) => {
      const target = l.split(' ')[4] ?? '';
      return roots.some((r) => target.startsWith(r)) || / - nsfs /.test(l);
    }).length + (await heldMounts(join(node.config.runDir, 'netns'))).length;
  const sub = await exec('btrfs', ['subvolume', 'list', '-o', node.config.pool.mountPoint], { allowFailure: true });
  const subvolumes = sub.stdout.split('\n').filter((l) => l.includes('sandboxes/')).length;
  let cgroups = 0;
  for (const p of new Set(Object.values(cgroupDirs(cgroupParent)))) {
    cgroups += (await readdir(p, { withFileTypes: true }).catch(() => [])).filter((e) => e.isDirectory()).length;
  }
  const containers = (await node.runtime.list()).length;
  const fds = (await readdir('/proc/self/fd')).length;
  const guests = await guestsUnder(cgroupParent);
  return { mounts, subvolumes, cgroups, containers, fds, guests };
}

/** Guest inits in this node's cgroups only: other nodes (a CI run, a bench) may run guests at the same time. */
async function guestsUnder(cgroupParent: string): Promise<number> {
  const ps = await exec('pgrep', ['-f', '^/.forkd/init'], { allowFailure: true });
  let n = 0;
  for (const pid of ps.stdout.split('\n').filter(Boolean)) {
    const cg = await readFile(`/proc/${pid}/cgroup`, 'utf8').catch(() => '');
    if (cg.includes(`/${cgroupParent}/`) || cg.includes(`/${cgroupParent}\n`)) n++;
  }
  return n;
}

/**
 * Everything on the host that no record accounts for, and every record whose
 * things are missing: runc containers and network namespaces, cgroups,
 * bundles and root volumes of instances that are not a sandbox's current one;
 * snapshot directories without a record (half-made `.tmp-*` ones included)
 * and records without a directory or a sandbox; staging directories left in
 * /dev/shm; namespace mounts. Empty when the node is consistent. Call it on a
 * settled node (`manager.settled()`): a rewind releases the instance it left
 * after answering.
 */
export async function orphans(node: Node): Promise<string[]> {
  const found: string[] = [];
  const records = await node.store.listSandboxes();
  const key = (r: (typeof records)[number]) => r.instance ?? r.id;
  const running = new Set(records.filter((r) => r.state === 'running').map(key));
  const withFiles = new Set(records.map(key));
  const pooled = node.manager.warmPool.held();
  const extra = (what: string, names: Iterable<string>, allowed: Set<string>) => {
    for (const n of names) if (!allowed.has(n) && !pooled.has(n)) found.push(`${what} ${n}`);
  };
  const missing = (what: string, names: Set<string>, present: Set<string>) => {
    for (const n of names) if (!present.has(n)) found.push(`missing ${what} ${n}`);
  };
  const containers = new Set(await node.runtime.list());
  extra('container or namespace', containers, running);
  missing('container', running, containers);
  const cgroups = new Set<string>();
  for (const d of new Set(Object.values(cgroupDirs(node.config.cgroupParent)))) {
    for (const e of await readdir(d, { withFileTypes: true }).catch(() => [])) if (e.isDirectory()) cgroups.add(e.name);
  }
  extra('cgroup', cgroups, running);
  const bundles = (await readdir(join(node.config.stateDir, 'bundles')).catch(() => [] as string[])).filter((n) => !n.startsWith('.'));
  extra('bundle', bundles, running);
  const volumes = new Set((await node.storage.list(poolLayout.sandboxes)).map((k) => k.split('/')[1] ?? ''));
  extra('volume', volumes, withFiles);
  missing('volume', withFiles, volumes);
  const snaps = (await Promise.all(records.map((r) => node.store.listSnapshots(r.id)))).flat();
  const total = (await node.store.snapshotTotals()).count;
  if (total !== snaps.length) found.push(`${total - snaps.length} snapshot records of sandboxes that are gone`);
  const snapIds = new Set(snaps.map((s) => s.id));
  const dirs = new Set((await node.storage.list(poolLayout.snapshots)).map((k) => k.split('/')[1] ?? ''));
  extra('snapshot dir', dirs, snapIds);
  missing('snapshot dir', snapIds, dirs);
  for (const n of await readdir(node.config.stagingDir).catch(() => [] as string[])) found.push(`staging dir ${n}`);
  // Held in the holder's mount namespace; the host's holds none of a sandbox's (neither namespace nor root).
  const netnsMounts = (await heldMounts(join(node.config.runDir, 'netns'))).length;
  if (netnsMounts !== running.size + pooled.size) found.push(`${netnsMounts} namespace mounts for ${running.size + pooled.size} running instances`);
  for (const m of await mountsUnder(node.config.runDir)) found.push(`host mount ${m}`);
  return found;
}
