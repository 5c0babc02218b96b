import { join } from 'node:path';
import { REPO_ROOT, type ForkdConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { criuActionPath, criuDumpConfigPath, criuPath, uffdPreloadPath } from '../setup/setup.js';
import { runcPath } from '../setup/private-runc.js';
import type { Network } from './network/network.js';
import { RuncRuntime } from './runtime/runc-runtime.js';
import type { RuncOptions } from './runtime/runc-options.js';
import type { Runtime } from './runtime/runtime.js';
import { StampedRuntime } from './runtime/stamped-runtime.js';
import { installedVersions } from './runtime/installed-versions.js';
import type { InstalledVersions } from './runtime/snapshot-compat.js';
import { ensurePool } from './storage/btrfs-pool.js';
import { BtrfsStorage } from './storage/btrfs-storage.js';
import { btrfsQuotas, type DiskQuotas } from './storage/disk-quota.js';
import { enableQuotas } from './storage/quota-mode.js';
import { QuotaKeeper } from './storage/quota-keeper.js';
import { LineageSweeper } from './storage/lineage-sweeper.js';
import type { Storage } from './storage/storage.js';

/** A storage driver, opened: its Storage and what it offers besides (disk quotas and their upkeep, if it has them). */
export interface OpenedStorage {
  storage: Storage;
  quotas?: DiskQuotas | undefined;
  /** Started; the node stops it at close. */
  quotaKeeper?: QuotaKeeper | undefined;
  /** Simple quotas' upkeep: the node stops it at close. */
  lineageSweeper?: LineageSweeper | undefined;
}

type StorageDriver = (config: ForkdConfig, logger: Logger) => Promise<OpenedStorage>;
type RuntimeDriver = (config: ForkdConfig, network: Network) => Runtime;

/**
 * The implementations a node can be made of, by the names FORKD_STORAGE and
 * FORKD_RUNTIME take (like containerd's plugin registry): one of each today.
 * A microVM runtime or another storage is one more entry here.
 */
const STORAGES: Record<string, StorageDriver> = {
  /** The pool mounted (a loop image unless FORKD_POOL), its quotas on (simple where the kernel has them; full qgroups kept consistent). */
  btrfs: async (config, logger) => {
    await ensurePool(config.pool, (m) => logger.info(m));
    const q = await enableQuotas(config.pool.mountPoint, config.quotaMode);
    logger.info(`disk quotas on: Btrfs ${q.mode === 'simple' ? 'simple quotas' : 'full qgroups'}`, { mode: q.mode, newlyEnabled: q.enabled, migratedFromFull: q.migrated, rescanMs: Math.round(q.rescanMs) });
    const quotas = btrfsQuotas(config.pool.mountPoint, q.mode);
    if (q.mode === 'simple') {
      const lineageSweeper = new LineageSweeper(config.pool.mountPoint, logger);
      return { storage: new BtrfsStorage(config.pool.mountPoint, { onRemove: () => lineageSweeper.removed() }), quotas, lineageSweeper };
    }
    const storage = new BtrfsStorage(config.pool.mountPoint);
    const quotaKeeper = new QuotaKeeper(config.pool.mountPoint, logger);
    quotaKeeper.start();
    return { storage, quotas, quotaKeeper };
  },
};

const RUNTIMES: Record<string, RuntimeDriver> = {
  runc: (config, network) => stamped(config, runcRuntime(config, network)),
};

/** Checkpoints say what made them and restores refuse what the installed tools cannot restore (StampedRuntime). */
function stamped(config: ForkdConfig, inner: Runtime): Runtime {
  let versions: Promise<InstalledVersions> | undefined;
  return new StampedRuntime(inner, () => (versions ??= installedVersions(criuPath(config), runcPath(config))), config.pool.mountPoint);
}

function runcRuntime(config: ForkdConfig, network: Network): Runtime {
  return new RuncRuntime(runcOptions(config, network));
}

/** The runc runtime's options from the node's config (a test swaps one tool for its own). */
export function runcOptions(config: ForkdConfig, network: Network): RuncOptions {
  return {
    network,
    stateRoot: join(config.runDir, 'runc'),
    bundleRoot: join(config.stateDir, 'bundles'),
    mountRoot: join(config.runDir, 'roots'),
    idmapTool: join(REPO_ROOT, 'packages/host-tools/build/forkd-idmap'),
    cgroupParent: config.cgroupParent,
    runc: runcPath(config),
    criu: criuPath(config),
    criuAction: criuActionPath(config),
    criuDumpConfig: criuDumpConfigPath(config),
    criuRelay: config.criuRelay,
    criuDirect: config.criuDirect,
    criuDumpLogLevel: config.criuDumpLogLevel,
    cacheDir: config.cacheDir,
    conntrackBuckets: config.conntrackBuckets,
    favorDynmods: config.cgroupFavorDynmods === 'enable',
    lazyRestore: config.lazyRestore,
    lazyRestoreMinBytes: config.lazyRestoreMinMb * 2 ** 20,
    lazyConnectWait: config.lazyConnectWait,
    cgroupV1Binds: config.cgroupV1Binds,
    devInRoot: config.devInRoot,
    uffdPreload: uffdPreloadPath(config),
    uffdBroker: join(REPO_ROOT, 'packages/host-tools/build/forkd-uffd-broker'),
    // At least a few guest deadlines (a test's short deadline must not cut real dumps short).
    checkpointDeadlineMs: Math.max(60_000, 4 * config.guestDeadlineS * 1000),
  };
}

/** The driver `name` of a registry; an unknown name fails start-up, naming the choices. */
function pick<T>(registry: Record<string, T>, name: string, variable: string): T {
  const d = Object.hasOwn(registry, name) ? registry[name] : undefined;
  if (!d) throw new Error(`${variable}=${name} is not one of: ${Object.keys(registry).join(', ')}`);
  return d;
}

/** Checks both names before anything is opened, so a typo fails before a pool is mounted. */
export function checkDrivers(config: ForkdConfig): void {
  pick(STORAGES, config.storage, 'FORKD_STORAGE');
  pick(RUNTIMES, config.runtime, 'FORKD_RUNTIME');
}

export function openStorage(config: ForkdConfig, logger: Logger): Promise<OpenedStorage> {
  return pick(STORAGES, config.storage, 'FORKD_STORAGE')(config, logger);
}

export function makeRuntime(config: ForkdConfig, network: Network): Runtime {
  return pick(RUNTIMES, config.runtime, 'FORKD_RUNTIME')(config, network);
}
