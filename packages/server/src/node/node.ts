import { useResidentSpawner } from '../shared/resident-spawner.js';
import { join } from 'node:path';
import type { BlobStore } from '../blob/blob-store.js';
import type { ForkdConfig } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { SqliteStore } from '../store/sqlite-store.js';
import type { Store } from '../store/store.js';
import { SandboxManager } from './manager/sandbox-manager.js';
import type { NodeEventSink } from './node-event.js';
import { DEFAULT_TIMELINE_POLICY } from './policy/timeline-policy.js';
import { Reconciler } from './policy/reconciler.js';
import { PolicyScheduler } from './policy/policy-scheduler.js';
import { ObservedStore } from '../store/observed-store.js';
import { sandboxTimeoutMs } from './manager/sandbox-timeout.js';
import type { Runtime } from './runtime/runtime.js';
import { NetnsNetwork } from './network/netns-network.js';
import type { QuotaKeeper } from './storage/quota-keeper.js';
import type { Storage } from './storage/storage.js';
import { TemplateRegistry } from './templates/template-registry.js';
import { ImageVolumes } from './images/image-volumes.js';
import { StepCache } from './dockerfile/step-cache.js';
import { CachePruner } from './storage/cache-pruner.js';
import { letSandboxesThrough } from './network/host-firewall.js';
import { checkDrivers, makeRuntime, openStorage } from './drivers.js';
import { lockNode, type NodeLock } from './node-lock.js';
import { privateDir, tightenPrivateState, usePrivateUmask } from '../shared/private-state.js';
import { openStagingDir } from './storage/staging-dir.js';
import { logStagingHuge, stagingHugePages } from './storage/staging-huge.js';
import type { NodeService } from '../node-contract/node-service.js';
import { LocalNode } from './local-node.js';
import type { EgressInterceptor } from './network/egress-interceptor.js';
import { enableUplinkForwarding, uplinkForwardingWarning } from './network/uplink-forwarding.js';
import { TableWatch } from './network/table-watch.js';
import { CredentialInterceptor } from './secrets/credential-interceptor.js';
import { NodeCredentials } from './secrets/node-credentials.js';
import { SandboxCas } from './secrets/sandbox-ca.js';

export interface Node {
  config: ForkdConfig;
  store: Store;
  storage: Storage;
  runtime: Runtime;
  templates: TemplateRegistry;
  manager: SandboxManager;
  /** The node contract over the manager: what a control plane (in this process or over HTTP) uses. */
  service: NodeService;
  /** What the egress proxy asks per connection and request: the sandboxes' credentials (just-in-time secrets). */
  egressInterceptor: EgressInterceptor;
  /** Rescans qgroups the kernel left inconsistent (see quota-keeper.ts); a storage without quotas has none. */
  quotaKeeper?: QuotaKeeper | undefined;
  /** Restores forkd's nftables table when someone else removes it (see table-watch.ts). */
  tableWatch: TableWatch;
  /** One pass of the node's policy over every sandbox (lifetimes, dead sandboxes, rolling snapshots, hibernation, thinning; see policy/reconciler.ts), at `now`. */
  tick(now?: number): Promise<void>;
  /**
   * The policy as a serving node runs it: per-sandbox timers and events, no
   * pass (see policy/policy-scheduler.ts). Resolves once every sandbox is
   * planned; close stops it.
   */
  startPolicy(): Promise<PolicyScheduler>;
  close(): Promise<void>;
}

/**
 * Wires the node's implementations together (picked by configuration, see
 * drivers.ts), opens the pool and reconciles state.
 */
/** `egressInterceptor`: the credentials seam of the egress proxy (see egress-interceptor.ts). */
export interface OpenNodeOptions {
  onEvent?: NodeEventSink;
  egressInterceptor?: EgressInterceptor;
  /** Where snapshots are exported to and imported from (NodeService.exportSnapshot); none: those calls are refused. */
  blobs?: BlobStore;
}

export async function openNode(config: ForkdConfig, logger: Logger, opts: OpenNodeOptions = {}): Promise<Node> {
  // A mistyped driver name fails before anything is made or mounted.
  checkDrivers(config);
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

async function openLocked(config: ForkdConfig, logger: Logger, opts: OpenNodeOptions, lock: NodeLock): Promise<Node> {
  useResidentSpawner(config.residentSpawn);
  await tightenPrivateState({ stateDir: config.stateDir, runDir: config.runDir, cacheDir: config.cacheDir, poolMountPoint: config.pool.mountPoint });
  const { storage, quotas, quotaKeeper, lineageSweeper } = await openStorage(config, logger);
  await openStagingDir(config.stagingDir, (m) => logger.warn(m));
  logStagingHuge(await stagingHugePages(config.stagingDir, { leave: config.stagingHugePages === 'leave' }), logger);
  const routedUplink = config.net.hostForwarding === 'enable' ? await enableUplinkForwarding(join(config.runDir, 'forwarding-by-forkd')).catch((err) => logger.warn('IPv4 forwarding could not be turned on', { error: String(err) })) : undefined;
  if (routedUplink) logger.info('IPv4 forwarding is on for the uplink for sandboxes\' egress (as Docker does; FORKD_HOST_FORWARDING=leave keeps the host\'s setting); new connections routed through this host from it are refused', { uplink: routedUplink });
  const forwarding = await uplinkForwardingWarning();
  if (forwarding) logger.warn(forwarding);
  // Observed: the policy follows its writes instead of re-reading every sandbox (see PolicyScheduler).
  const store = new ObservedStore(new SqliteStore(join(config.stateDir, 'forkd.db')));
  // The summaries' index is made before anything writes (see ObservedStore.summaries).
  await store.summaries();
  const cas = new SandboxCas(join(config.stateDir, 'sandbox-ca'));
  const credentials = new NodeCredentials(new CredentialInterceptor(cas, opts.onEvent), cas);
  // A test may put its own interceptor in the proxy; the node's credentials are then not injected.
  // The node's own listeners: refused to sandboxes on the host's and loopback addresses, whatever is allowed.
  const servicePorts = [config.port, config.e2bApiPort, config.e2bEnvdPort].filter((p): p is number => typeof p === 'number' && p > 0);
  const network = new NetnsNetwork(join(config.runDir, 'netns'), { ...config.net, routedUplink: routedUplink || undefined, servicePorts, interceptor: opts.egressInterceptor ?? credentials.interceptor });
  const runtime = makeRuntime(config, network);
  await runtime.prepareHost(logger);
  const templates = new TemplateRegistry(storage, store);
  const images = new ImageVolumes({ storage, access: config.registries, maxBytes: config.imageMaxMb * 2 ** 20, logger });
  await images.sweep();
  const steps = new StepCache(storage);
  await steps.sweep();
  const cachePruner = new CachePruner({ steps, images }, config.buildCacheDays, logger);
  cachePruner.start();
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
    warmPoolTemplates: config.warmPoolTemplates,
    hotPauseMs: config.hotPauseS * 1000,
    keepPausedRoot: config.keepPausedRoot,
    recoverOnStart: config.recoverOnStart,
    userns: config.userns,
    guestDeadlineMs: config.guestDeadlineS * 1000,
    admission: {
      overcommit: { memory: config.memoryOvercommit, cpus: config.cpuOvercommit },
      maxima: { memoryMb: config.maxMemoryMb, cpus: config.maxCpus, pids: config.maxPids },
    },
    summaries: () => store.summaries(),
    disk: {
      pool: config.pool.mountPoint,
      defaultDiskMb: config.defaultDiskMb,
      free: { minFreeMb: config.poolMinFreeMb, minFreePct: config.poolMinFreePct },
      overcommit: config.diskOvercommit,
      quotas,
    },
    ...(opts.onEvent ? { onEvent: opts.onEvent } : {}),
    ...(opts.blobs ? { blobs: opts.blobs } : {}),
  });
  await manager.recover();
  // After the start-up check (which re-applied every rule): from now on a removed table is restored as it happens.
  const firewall = () => letSandboxesThrough(config.net.ifPrefix, logger);
  await firewall();
  const tableWatch = new TableWatch({ table: config.net.table, restore: () => manager.reapplyNetworks(), firewall, logger });
  tableWatch.start();
  // Policy above the manager, through its public methods only.
  const defaults = { timeline: { ...DEFAULT_TIMELINE_POLICY, intervalMs: config.snapshotIntervalS * 1000 }, idleTimeoutMs: config.idleTimeoutS * 1000 };
  const reconciler = new Reconciler(manager, sandboxTimeoutMs(manager.guestDeadlineMs), defaults);
  let scheduler: PolicyScheduler | undefined;
  return {
    config,
    store,
    storage,
    runtime,
    templates,
    manager,
    service: new LocalNode(manager, templates, credentials, images, steps),
    egressInterceptor: credentials.interceptor,
    quotaKeeper,
    tableWatch,
    tick: (now) => reconciler.tick(now),
    async startPolicy() {
      if (!scheduler) {
        scheduler = new PolicyScheduler(manager, reconciler, { onSandboxChange: (l) => store.onSandboxChange(l), onActive: (l) => manager.onActive(l) }, defaults);
        await scheduler.start();
      }
      return scheduler;
    },
    async close() {
      scheduler?.stop();
      await quotaKeeper?.stop();
      await lineageSweeper?.stop();
      await cachePruner.stop();
      await tableWatch.close();
      await manager.close();
      await network.close();
      await store.close();
      await lock.release();
    },
  };
}
