import { join } from 'node:path';
import { REPO_ROOT, type ForkdConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { SqliteStore } from '../store/sqlite-store.js';
import type { Store } from '../store/store.js';
import { SandboxManager } from './manager/sandbox-manager.js';
import type { NodeEventSink } from './node-event.js';
import { DEFAULT_TIMELINE_POLICY } from './policy/timeline-policy.js';
import { Reconciler } from './policy/reconciler.js';
import { sandboxTimeoutMs } from './manager/sandbox-timeout.js';
import { RuncRuntime } from './runtime/runc-runtime.js';
import { NetnsNetwork } from './network/netns-network.js';
import { BtrfsStorage } from './storage/btrfs-storage.js';
import { ensurePool } from './storage/btrfs-pool.js';
import { btrfsQuotas, enableQuotas } from './storage/disk-quota.js';
import { QuotaKeeper } from './storage/quota-keeper.js';
import { TemplateRegistry } from './templates/template-registry.js';
import { criuActionPath, criuPath, uffdPreloadPath } from '../setup/setup.js';
import { runcPath } from '../setup/private-runc.js';
import { refreshCriuKdat } from '../setup/criu-kdat.js';
import { lockNode, type NodeLock } from './node-lock.js';
import { privateDir, tightenPrivateState, usePrivateUmask } from '../shared/private-state.js';
import { openStagingDir } from './storage/staging-dir.js';
import type { NodeService } from '../node-contract/node-service.js';
import { LocalNode } from './local-node.js';

export interface Node {
  config: ForkdConfig;
  store: Store;
  storage: BtrfsStorage;
  runtime: RuncRuntime;
  templates: TemplateRegistry;
  manager: SandboxManager;
  /** The node contract over the manager: what a control plane (in this process or over HTTP) uses. */
  service: NodeService;
  /** Rescans qgroups the kernel left inconsistent (see quota-keeper.ts). */
  quotaKeeper: QuotaKeeper;
  /** One pass of the node's policy (lifetimes, dead sandboxes, rolling snapshots, hibernation, thinning; see policy/reconciler.ts). */
  tick(now?: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Wires the node's implementations together (the one place that picks them,
 * like containerd's plugin registry), mounts the pool and reconciles state.
 */
export async function openNode(config: ForkdConfig, logger: Logger, opts: { onEvent?: NodeEventSink } = {}): Promise<Node> {
  // Private state (see shared/private-state.ts): also for callers that are not the CLI (tests, embedding).
  usePrivateUmask();
  await privateDir(config.stateDir);
  const lock = await lockNode(config.stateDir);
  try {
    return await openLocked(config, logger, opts, lock);
  } catch (err) {
    await lock.release();
    throw err;
  }
}

async function openLocked(config: ForkdConfig, logger: Logger, opts: { onEvent?: NodeEventSink }, lock: NodeLock): Promise<Node> {
  await tightenPrivateState({ stateDir: config.stateDir, runDir: config.runDir, cacheDir: config.cacheDir, poolMountPoint: config.pool.mountPoint });
  await ensurePool(config.pool, (m) => logger.info(m));
  const quotas = await enableQuotas(config.pool.mountPoint);
  if (quotas.enabled || quotas.rescanMs > 1000) logger.info('disk quotas (Btrfs qgroups) on', { newlyEnabled: quotas.enabled, rescanMs: Math.round(quotas.rescanMs) });
  const quotaKeeper = new QuotaKeeper(config.pool.mountPoint, logger);
  quotaKeeper.start();
  await openStagingDir(config.stagingDir, (m) => logger.warn(m));
  if (!(await refreshCriuKdat(criuPath(config), config.cacheDir))) logger.warn('criu kernel probe not cached: every checkpoint and restore will probe again');
  const store = new SqliteStore(join(config.stateDir, 'forkd.db'));
  const storage = new BtrfsStorage(config.pool.mountPoint);
  const network = new NetnsNetwork(join(config.runDir, 'netns'));
  const runtime = new RuncRuntime({
    network,
    stateRoot: join(config.runDir, 'runc'),
    bundleRoot: join(config.stateDir, 'bundles'),
    mountRoot: join(config.runDir, 'roots'),
    idmapTool: join(REPO_ROOT, 'packages/host-tools/build/forkd-idmap'),
    cgroupParent: config.cgroupParent,
    runc: runcPath(config),
    criu: criuPath(config),
    criuAction: criuActionPath(config),
    lazyRestore: config.lazyRestore,
    uffdPreload: uffdPreloadPath(config),
    uffdBroker: join(REPO_ROOT, 'packages/host-tools/build/forkd-uffd-broker'),
    // At least a few guest deadlines (a test's short deadline must not cut real dumps short).
    checkpointDeadlineMs: Math.max(60_000, 4 * config.guestDeadlineS * 1000),
  });
  const templates = new TemplateRegistry(storage, store);
  const manager = new SandboxManager({
    store,
    storage,
    runtime,
    network,
    templates,
    guestBinary: config.guestBinary,
    stagingDir: config.stagingDir,
    logger,
    warmPoolSize: config.warmPool,
    recoverOnStart: config.recoverOnStart,
    userns: config.userns,
    guestDeadlineMs: config.guestDeadlineS * 1000,
    admission: {
      overcommit: { memory: config.memoryOvercommit, cpus: config.cpuOvercommit },
      maxima: { memoryMb: config.maxMemoryMb, cpus: config.maxCpus, pids: config.maxPids },
    },
    disk: {
      pool: config.pool.mountPoint,
      defaultDiskMb: config.defaultDiskMb,
      free: { minFreeMb: config.poolMinFreeMb, minFreePct: config.poolMinFreePct },
      overcommit: config.diskOvercommit,
      quotas: btrfsQuotas(config.pool.mountPoint),
    },
    ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
  });
  await manager.recover();
  // Policy above the manager, through its public methods only.
  const reconciler = new Reconciler(manager, sandboxTimeoutMs(manager.guestDeadlineMs), {
    timeline: { ...DEFAULT_TIMELINE_POLICY, intervalMs: config.snapshotIntervalS * 1000 },
    idleTimeoutMs: config.idleTimeoutS * 1000,
  });
  return {
    config,
    store,
    storage,
    runtime,
    templates,
    manager,
    service: new LocalNode(manager, templates),
    quotaKeeper,
    tick: (now) => reconciler.tick(now),
    async close() {
      await quotaKeeper.stop();
      await manager.close();
      await store.close();
      await lock.release();
    },
  };
}
