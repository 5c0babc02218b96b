import { realpath } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { minFreeBytes } from '../node/storage/pool-space.js';
import { currentMode, kernelHasSimpleQuotas } from '../node/storage/quota-mode.js';
import { mountOf, parseMountinfo, type MountEntry } from '../shared/mountinfo.js';
import { finding, type DoctorContext, type HostCheck } from './host-check.js';

/** The mount the pool's directory is on (the last, topmost, of the longest matching mount point). */
async function poolMount({ host, config }: DoctorContext): Promise<MountEntry | undefined> {
  const path = config.pool.mountPoint.replace(/\/+$/, '');
  return mountOf(parseMountinfo((await host.read('/proc/self/mountinfo')) ?? ''), path);
}

/** The pool's filesystem mounted and Btrfs: what the space and quota checks read. */
async function mountedPool(ctx: DoctorContext): Promise<MountEntry | undefined> {
  const m = await poolMount(ctx);
  const own = ctx.config.pool.image ? m?.mountPoint === ctx.config.pool.mountPoint.replace(/\/+$/, '') : true;
  return m && own && m.fstype === 'btrfs' ? m : undefined;
}

export const poolCheck: HostCheck = async (ctx) => {
  const { config, host } = ctx;
  const { mountPoint, image } = config.pool;
  const m = await poolMount(ctx);
  if (!image) {
    if (m?.fstype === 'btrfs') return finding('pool', 'ok', `FORKD_POOL ${mountPoint} on Btrfs`);
    return finding('pool', 'error', `FORKD_POOL ${mountPoint} is not on Btrfs (${m?.fstype ?? 'no mount'})`, 'point FORKD_POOL at a directory of a Btrfs filesystem, or unset it for a loop image under the state dir');
  }
  if (m?.mountPoint === mountPoint.replace(/\/+$/, '')) {
    if (m.fstype === 'btrfs') return finding('pool', 'ok', `${mountPoint} (Btrfs on the loop image ${image})`);
    return finding('pool', 'error', `${mountPoint} is a ${m.fstype} mount, not the pool's Btrfs`, `unmount ${mountPoint}; forkd serve mounts the pool there`);
  }
  const there = await host.presence(image);
  if (there === 'present') return finding('pool', 'ok', `the loop image ${image}, not mounted now (forkd serve mounts it)`);
  if (there === 'denied') return finding('pool', 'skip', `${image} is not readable by this user`, 'run forkd doctor as root');
  return finding('pool', 'warn', `no pool yet (${image})`, 'run forkd setup (or forkd serve, which sets up first)');
};

const GiB = 2 ** 30;
const gib = (n: number) => `${(n / GiB).toFixed(1)} GiB`;

/** Against the threshold below which creates, forks and snapshots are refused (pool-space.ts, the same numbers). */
export const poolSpaceCheck: HostCheck = async (ctx) => {
  const { config, host } = ctx;
  const space = (await mountedPool(ctx)) ? host.space(config.pool.mountPoint) : undefined;
  if (!space) return finding('pool-space', 'skip', 'the pool is not mounted (or not readable by this user)');
  const floor = minFreeBytes(space, { minFreeMb: config.poolMinFreeMb, minFreePct: config.poolMinFreePct });
  const said = `${gib(space.freeBytes)} free of ${gib(space.sizeBytes)}, creates, forks and snapshots refused below ${gib(floor)}`;
  const fix = 'delete sandboxes and snapshots no longer needed (forkd rm, forkd snapshot-rm), or grow the pool (a larger loop image or device, then btrfs filesystem resize max)';
  if (space.freeBytes < floor) return finding('pool-space', 'error', `the pool is full: ${said}`, fix);
  if (space.freeBytes < 2 * floor) return finding('pool-space', 'warn', `the pool is almost full: ${said}`, fix);
  return finding('pool-space', 'ok', said);
};

/** The pool's filesystem in sysfs, found by its device (/sys/fs/btrfs/<fsid>/devices/<dev>). */
async function sysfsDir(ctx: DoctorContext, m: MountEntry): Promise<string | undefined> {
  // A device-mapper source (/dev/mapper/x) is listed by its kernel name (dm-N), its link's target.
  const dev = basename(await realpath(join(ctx.host.root, m.source)).catch(() => m.source));
  for (const fsid of await ctx.host.list('/sys/fs/btrfs')) {
    if ((await ctx.host.presence(join('/sys/fs/btrfs', fsid, 'devices', dev))) === 'present') return join('/sys/fs/btrfs', fsid);
  }
  return undefined;
}

/** The mode enableQuotas leaves the pool in (quota-mode.ts reads the same sysfs files). */
export const quotaModeCheck: HostCheck = async (ctx) => {
  const m = await mountedPool(ctx);
  const fs = m && (await sysfsDir(ctx, m));
  const dir = fs && join(ctx.host.root, fs, 'qgroups');
  if (!dir) return finding('quota-mode', 'skip', 'the pool is not mounted (or its filesystem is not in /sys/fs/btrfs)');
  const mode = await currentMode(dir);
  if (mode === 'off') return finding('quota-mode', 'warn', 'quotas are off in the pool: sandboxes\' disk limits are not enforced', 'start forkd (forkd serve turns them on)');
  if (mode === 'simple') return finding('quota-mode', 'ok', 'simple quotas');
  if (ctx.config.quotaMode === 'full') return finding('quota-mode', 'ok', 'full qgroups (FORKD_QUOTA_MODE=full)');
  if (await kernelHasSimpleQuotas(join(ctx.host.root, '/sys'))) return finding('quota-mode', 'ok', 'full qgroups, switched to simple quotas at the next start');
  return finding('quota-mode', 'warn', 'full qgroups (the kernel has no simple quotas): accounting costs grow with sandboxes, deletes clean up slowly', 'boot Linux ≥ 6.7 (simple quotas)');
};

/**
 * The node size and metadata copies the pool was made with (btrfs-pool.ts
 * POOL_MKFS_OPTIONS): with 16 KiB nodes or two metadata copies, each
 * snapshot commit writes more the more sandboxes share the template, and
 * creates slow down with their number. Only mkfs sets them.
 */
export const poolLayoutCheck: HostCheck = async (ctx) => {
  const m = await mountedPool(ctx);
  const fs = m && (await sysfsDir(ctx, m));
  const nodesize = fs && Number((await ctx.host.read(join(fs, 'nodesize')))?.trim());
  if (!fs || !nodesize) return finding('pool-layout', 'skip', 'the pool is not mounted (or its filesystem is not in /sys/fs/btrfs)');
  const dup = (await ctx.host.presence(join(fs, 'allocation/metadata/dup'))) === 'present';
  const layout = `${nodesize / 1024} KiB nodes, ${dup ? 'two metadata copies' : 'one metadata copy'}`;
  if (nodesize <= 8192 && !dup) return finding('pool-layout', 'ok', layout);
  const said = `${layout}: each sandbox's first writes cost more metadata the more sandboxes there are (creates took 113 ms at 500 sandboxes against 72 ms with 8 KiB nodes and one copy)`;
  if (!ctx.config.pool.image) return finding('pool-layout', 'ok', `${said}; FORKD_POOL is the operator's filesystem`);
  return finding('pool-layout', 'warn', `${said}; the loop image was made before forkd made it with 8 KiB nodes and one copy`, `stop forkd and remove ${ctx.config.pool.image} (its sandboxes, snapshots and templates go with it); forkd serve makes a new one`);
};
