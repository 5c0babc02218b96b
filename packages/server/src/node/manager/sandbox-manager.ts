import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rename, rm, statfs, writeFile } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  BuildTemplateRequest,
  canTransition,
  CreateSandboxRequest,
  ForkdError,
  Limits,
  newSandboxId,
  newSnapshotId,
  type SandboxInfo,
  type SandboxState,
  type SandboxMetrics,
  type SnapshotInfo,
  type TemplateInfo,
  type WatchEvent,
} from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import type { SandboxPolicy, SandboxRecord, SnapshotRecord, Store } from '../../store/store.js';
import { exec } from '../../shared/exec.js';
import { crashPoint } from '../../shared/crash-point.js';
import { GuestClient, type GuestProcess, type OutputHandlers, type ProcessExit, type SpawnOptions } from '../guest/guest-client.js';
import { ProcessSession, type ProcessHandle } from './process-session.js';
import { ReattachGate } from './reattach-gate.js';
import { ID_RANGE_SIZE, pickIdRange } from './id-ranges.js';
import { watchSession, type WatchHandle } from './watch-session.js';
import type { Network, PortConnection } from '../network/network.js';
import type { IdMap, ResourceUsage, Runtime } from '../runtime/runtime.js';
import type { Storage } from '../storage/storage.js';
import { storeImages } from '../storage/image-store.js';
import { rootfsOps, type RootfsOp } from '../storage/rootfs-ops.js';
import { checkStagingDir } from '../storage/staging-dir.js';
import type { TemplateRegistry } from '../templates/template-registry.js';
import { WarmPool } from './warm-pool.js';
import { DEFAULT_TIMELINE_POLICY, type TimelinePolicy } from './timeline-policy.js';
import { Reconciler } from './reconciler.js';
import { LOST_AT_START, Recovery, stagedPath, sweepStaging } from './recovery.js';
import { eachBounded } from './each-bounded.js';
import { GUEST_DEADLINE_MS } from '../guest/guest-connection.js';
import { RECOVERY_CONCURRENCY, sandboxTimeoutMs } from './sandbox-timeout.js';
import type { NodeEventSink } from '../node-event.js';
import { buildTemplate } from '../templates/template-builder.js';
import { commitOf, NodeAdmission, type OvercommitPolicy } from './admission.js';
import { readHostCapacity, type HostCapacity } from './host-capacity.js';
import { checkMaxima, sandboxMaxima, type SandboxMaxima } from './sandbox-maxima.js';
import { SandboxDisk, type SandboxDiskOptions } from './sandbox-disk.js';

export interface ManagerDeps {
  store: Store;
  storage: Storage;
  runtime: Runtime;
  network: Network;
  templates: TemplateRegistry;
  guestBinary: string;
  /** Memory-backed directory for CRIU dumps (see storeImages). */
  stagingDir?: string;
  logger: Logger;
  /** Sandboxes per template kept started ahead of demand (0 disables). */
  warmPoolSize?: number;
  /** Server defaults of the rolling timeline (per-sandbox interval may override). */
  timeline?: TimelinePolicy;
  /** Default idle time before hibernation, ms (0 = never). */
  idleTimeoutMs?: number;
  /** Bring back sandboxes whose processes were lost when the daemon starts (default true; see recovery.ts). */
  recoverOnStart?: boolean;
  /** New sandboxes get a user namespace (an id range of their own; see id-ranges.ts). */
  userns?: boolean;
  /** Things that happened to sandboxes without a call (lost, recovered): the control plane logs them. */
  onEvent?: NodeEventSink;
  /** Deadline of every guest operation (default GUEST_DEADLINE_MS); the reconciler's and recovery's per-sandbox timeouts follow from it (see sandboxTimeoutMs). */
  guestDeadlineMs?: number;
  /** Whether the host can take a sandbox (see admission.ts, sandbox-maxima.ts); default: this host, memory 4×, CPUs unchecked, maxima from the host. */
  admission?: { host?: HostCapacity; overcommit?: OvercommitPolicy; maxima?: Partial<SandboxMaxima> };
  /** Disk quotas, the pool's free-space watch and disk admission (see sandbox-disk.ts); default: none of them, 10 GiB recorded. */
  disk?: SandboxDiskOptions;
}

export interface NodeStats {
  snapshots: number;
  snapshotBytes: number;
  poolUsedBytes: number;
  poolSizeBytes: number;
  warmPoolHeld: number;
}

export interface ForkTree {
  sandbox: SandboxInfo;
  children: ForkTree[];
}

export interface ExecExit extends ProcessExit {
  oomKilled: boolean;
}

/** Where the guest agent lives inside every sandbox root. */
export const GUEST_DIR = '.forkd';
const AGENT_SOCKET = 'agent.sock';
/** In a snapshot directory: its memory images are still in staging, at the path this file holds. */
const STAGED_MARKER = 'staged';
const GUEST_INIT = `/${GUEST_DIR}/init`;
/** A start or restore on a loaded host (a Btrfs cleaner busy, both cores taken) can take seconds. */
const READY_TIMEOUT_MS = 30_000;

const ms = (x: number) => Math.round(x * 10) / 10;

function toInfo(r: SandboxRecord): SandboxInfo {
  return {
    id: r.id,
    template: r.template,
    state: r.state,
    limits: r.limits,
    env: r.env,
    metadata: r.metadata,
    createdAt: r.createdAt,
    hostname: r.id,
    ...(r.error ? { error: r.error } : {}),
    ...(r.forkedFrom ? { forkedFrom: r.forkedFrom } : {}),
    ...(r.policy?.expiresAt ? { expiresAt: r.policy.expiresAt, onTimeout: r.policy.onTimeout ?? 'pause' } : {}),
    ...(r.recovered ? { recovered: r.recovered } : {}),
  };
}

/** A policy whose lifetime (if it has one) starts now. */
function freshLifetime(p: SandboxPolicy | undefined, now = Date.now()): SandboxPolicy | undefined {
  if (!p?.timeoutSeconds) return p && { ...p, expiresAt: undefined };
  return { ...p, expiresAt: new Date(now + p.timeoutSeconds * 1000).toISOString() };
}

function toSnapshotInfo(r: SnapshotRecord): SnapshotInfo {
  return { ...r };
}

/**
 * The node's sandbox lifecycle: composes Storage, Runtime and the guest link
 * behind one API, persists every state change before acting on it, and on
 * start reconciles the store with what actually runs.
 */
export class SandboxManager {
  readonly #d: ManagerDeps;
  /** Guest links by runtime key (see SandboxRecord.instance). */
  readonly #guests = new Map<string, GuestClient>();
  /** Releases of instances left by rewinds, finished in the background (awaited by close). */
  readonly #background = new Set<Promise<void>>();
  /** Snapshots whose memory images are still being moved from staging into the pool (see #storeLater). */
  readonly #storing = new Map<string, Promise<void>>();
  /** Last API use per sandbox (idle hibernation). */
  readonly #activity = new Map<string, number>();
  readonly #pool: WarmPool;
  readonly #reconciler: Reconciler;
  readonly #recovery: Recovery;
  /** Id ranges of warm-pool members (no record yet) and of starts whose record does not have theirs yet. */
  readonly #pooledIdmap = new Map<string, IdMap | undefined>();
  readonly #reservedIds = new Set<number>();
  /** Streams that lost their guest connection wait here for the sandbox to be reachable again. */
  readonly #reattach = new ReattachGate();
  readonly #admission: NodeAdmission;
  readonly #maxima: SandboxMaxima;
  readonly #space: SandboxDisk;

  constructor(deps: ManagerDeps) {
    this.#d = deps;
    this.#space = new SandboxDisk(deps.disk ?? { defaultDiskMb: 10240, free: { minFreeMb: 0, minFreePct: 0 }, overcommit: 0 }, deps.logger);
    const host = deps.admission?.host ?? readHostCapacity();
    this.#maxima = sandboxMaxima(host, deps.admission?.maxima);
    this.#admission = new NodeAdmission(() => deps.store.listSandboxes(), host, deps.admission?.overcommit ?? { memory: 4, cpus: 0 });
    this.#reconciler = new Reconciler(this, sandboxTimeoutMs(this.#guestDeadline));
    this.#recovery = new Recovery({
      store: deps.store,
      runtime: deps.runtime,
      logger: deps.logger,
      onEvent: deps.onEvent,
      key: (id) => this.#key(id),
      dropProcesses: async (key) => {
        this.#guests.get(key)?.detachAll();
        this.#guests.delete(key);
        await deps.runtime.destroy(key);
      },
      restorable: async (snapId) => {
        await this.#storing.get(snapId);
        const dir = this.snapshotDir(snapId);
        return existsSync(join(dir, 'memory', 'inventory.img')) && existsSync(join(dir, 'rootfs')) && !existsSync(join(dir, STAGED_MARKER));
      },
      restoreInto: (key, r, snap) => this.#restoreInto(key, r, snap),
      startCold: (key, r) => this.#startCold(key, r),
      waitReady: (key) => this.#waitReady(key),
      transition: (r, to, error) => this.#transition(r, to, error),
    });
    this.#pool = new WarmPool(
      {
        start: async (template) => {
          const id = newSandboxId();
          this.#pooledIdmap.set(id, await this.#start(id, template, Limits.parse({})));
          return id;
        },
        destroy: (id) => {
          this.#pooledIdmap.delete(id);
          return this.#release(id);
        },
        logger: deps.logger,
      },
      deps.warmPoolSize ?? 0,
      ['base'],
    );
  }

  get logger(): Logger {
    return this.#d.logger;
  }

  /** The largest sandbox this node makes (FORKD_MAX_*). */
  get maxima(): SandboxMaxima {
    return this.#maxima;
  }

  /** Starts filling the warm pool (after recovery, so orphans are gone first). */
  startWarmPool(): void {
    this.#pool.fill();
  }

  get warmPool(): WarmPool {
    return this.#pool;
  }

  /** Stops the warm pool; user sandboxes keep running. */
  async close(): Promise<void> {
    await this.#pool.close();
    await this.settled();
  }

  /** Resolves once the work operations left to the background is done (rewinds: release of the instance left, store of its images). */
  async settled(): Promise<void> {
    await Promise.all([...this.#background, ...this.#storing.values(), this.#space.settled()]);
  }

  /** Runtime key of a sandbox's current instance (warm-pool sandboxes have no record yet: their id). */
  #key(id: string): string {
    return this.#d.store.getSandbox(id)?.instance ?? id;
  }

  #volumeOf(key: string): string {
    return `sandboxes/${key}`;
  }

  volume(id: string): string {
    return this.#volumeOf(this.#key(id));
  }

  rootfs(id: string): string {
    return this.#rootfsOf(this.#key(id));
  }

  #rootfsOf(key: string): string {
    return this.#d.storage.path(this.#volumeOf(key));
  }

  #templateRoot(template: string): string {
    return this.#d.storage.path(this.#d.templates.volume(template));
  }

  #record(id: string): SandboxRecord {
    const r = this.#d.store.getSandbox(id);
    if (!r) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
    return r;
  }

  #transition(r: SandboxRecord, to: SandboxState, error?: string): void {
    if (!canTransition(r.state, to)) throw new ForkdError('CONFLICT', `sandbox ${r.id} is ${r.state}, cannot become ${to}`);
    if (!this.#d.store.transition(r.id, r.state, to, error)) throw new ForkdError('CONFLICT', `sandbox ${r.id} changed state concurrently`);
    r.state = to;
    r.error = error;
  }

  get(id: string): SandboxInfo {
    return toInfo(this.#record(id));
  }

  list(): SandboxInfo[] {
    return this.#d.store.listSandboxes().map(toInfo);
  }

  async create(input: CreateSandboxRequest, claim?: (id: string) => void): Promise<SandboxInfo> {
    const parsed = CreateSandboxRequest.safeParse(input);
    if (!parsed.success) throw new ForkdError('INVALID_ARGUMENT', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
    const req = parsed.data;
    if (!(await this.#d.templates.has(req.template))) throw new ForkdError('NOT_FOUND', `template ${req.template} not found`);
    const space = this.#space.checkFree('create a sandbox');
    const limits = Limits.parse({ memoryMb: req.memoryMb, cpus: req.cpus, pids: req.pids, diskMb: req.diskMb ?? this.#space.defaultDiskMb });
    checkMaxima(limits, this.#maxima);
    // Admitted and recorded (insertSandbox below) with no await between: the record holds the room from here.
    this.#admission.check(commitOf(limits));
    this.#space.admit(space, this.#space.diskMbOf(limits), this.#d.store.listSandboxes());
    // A warm sandbox already has its id (its hostname, volume and container are keyed by it).
    const warm = this.#pool.take(req.template);
    const rec: SandboxRecord = {
      id: warm ?? newSandboxId(),
      template: req.template,
      state: 'creating',
      limits,
      env: req.env ?? {},
      metadata: req.metadata ?? {},
      createdAt: new Date().toISOString(),
      ...(req.snapshotIntervalSeconds !== undefined || req.idleTimeoutSeconds !== undefined || req.timeoutSeconds || req.onTimeout
        ? { policy: freshLifetime({ snapshotIntervalSeconds: req.snapshotIntervalSeconds, idleTimeoutSeconds: req.idleTimeoutSeconds, timeoutSeconds: req.timeoutSeconds || undefined, onTimeout: req.onTimeout }) }
        : {}),
    };
    try {
      claim?.(rec.id);
    } catch (err) {
      if (warm) await this.#release(warm).catch(() => {});
      throw err;
    }
    // Listed from here on (as creating): a delete by id waits for the start to finish.
    this.#d.store.insertSandbox(rec);
    return this.#exclusive(rec.id, async () => {
      try {
        const idmap = warm ? await this.#adopt(rec) : await this.#start(rec.id, rec.template, limits);
        this.#recordIdmap(rec, idmap);
        this.#transition(rec, 'running');
        this.markActive(rec.id);
        this.#d.logger.info('sandbox created', { sandbox: rec.id, template: rec.template, warm: !!warm });
        return toInfo(rec);
      } catch (err) {
        this.#d.logger.warn('sandbox create failed', { sandbox: rec.id, error: (err as Error).message });
        await this.#release(rec.id).catch(() => {});
        this.#d.store.deleteSandbox(rec.id);
        throw err;
      }
    });
  }

  /**
   * A warm sandbox started with default limits: apply the requested ones. A
   * member that is gone or does not answer (destroyed behind the pool's back,
   * its agent killed) is replaced by a cold start under the same id: the
   * caller asked for a sandbox, not for that one.
   */
  async #adopt(rec: SandboxRecord): Promise<IdMap | undefined> {
    const key = this.#key(rec.id);
    const idmap = this.#pooledIdmap.get(rec.id);
    this.#pooledIdmap.delete(rec.id);
    try {
      await this.#guestAt(key).info();
      // Pool members were started with the default quota.
      if (this.#space.diskMbOf(rec.limits) !== this.#space.defaultDiskMb) await this.#space.apply(this.#rootfsOf(key), this.#templateRoot(rec.template), rec.limits.diskMb);
      const defaults = Limits.parse({});
      if (rec.limits.memoryMb !== defaults.memoryMb || rec.limits.cpus !== defaults.cpus || rec.limits.pids !== defaults.pids) {
        await this.#d.runtime.update(key, rec.limits);
      }
      return idmap;
    } catch (err) {
      this.#d.logger.warn('warm sandbox unusable, starting one cold', { sandbox: rec.id, error: (err as Error).message });
      await this.#release(rec.id);
      return this.#start(rec.id, rec.template, rec.limits);
    }
  }

  /**
   * A fresh id range for a sandbox started from files (a warm template's or
   * a snapshot's restore gets the range of its images instead). None is
   * shared with a sandbox, fork or warm template that exists.
   */
  #newIdmap(): IdMap | undefined {
    if (!this.#d.userns) return undefined;
    const used = new Set<number>(this.#reservedIds);
    for (const r of this.#d.store.listSandboxes()) if (r.idmap !== undefined) used.add(r.idmap);
    for (const t of this.#d.templates.list()) {
      const m = this.#d.templates.get(t.name)?.idmap;
      if (m !== undefined) used.add(m);
    }
    for (const m of this.#pooledIdmap.values()) if (m) used.add(m.hostId);
    const hostId = pickIdRange(used);
    this.#reservedIds.add(hostId);
    return { hostId, size: ID_RANGE_SIZE };
  }

  #recordIdmap(r: SandboxRecord, idmap: IdMap | undefined): void {
    if (idmap) this.#reservedIds.delete(idmap.hostId);
    if (r.idmap === idmap?.hostId) return;
    this.#d.store.setIdmap(r.id, idmap?.hostId);
    r.idmap = idmap?.hostId;
  }

  /** Root filesystem, container and a guest that answers: a sandbox ready for work. */
  async #start(id: string, template: string, limits: Limits): Promise<IdMap | undefined> {
    const t0 = performance.now();
    const rootfs = await this.#d.storage.prepare(this.volume(id), this.#d.templates.volume(template));
    await this.#space.limitForStart(rootfs, this.#templateRoot(template), limits.diskMb);
    const warm = this.#d.templates.get(template)?.images;
    // A warm template's memory maps the agent binary it was built with: keep that one.
    // (/dev is the runtime's own tmpfs, see oci-spec; the root's hidden /dev is emptied, see #prepareRoot.)
    await this.#prepareRoot(id, { install: !warm });
    const t1 = performance.now();
    const spec = { rootfs, hostname: id, limits, init: GUEST_INIT, env: {}, idmap: warm ? undefined : this.#newIdmap() };
    const st = warm ? await this.#d.runtime.restore(id, spec, { imagesDir: this.#d.templates.imagesDir(template) }) : await this.#d.runtime.start(id, spec);
    const t2 = performance.now();
    await this.#waitReady(id);
    this.#d.logger.debug('sandbox started', { sandbox: id, rootfsMs: ms(t1 - t0), runtimeMs: ms(t2 - t1), readyMs: ms(performance.now() - t2) });
    return st.idmap;
  }

  /** Recovery without a usable snapshot: the agent started afresh on the instance's own root volume (its files, no memory). */
  async #startCold(key: string, r: SandboxRecord): Promise<void> {
    const rootfs = this.#rootfsOf(key);
    if (!existsSync(rootfs)) throw new ForkdError('FAILED_PRECONDITION', `sandbox ${r.id} has neither a usable snapshot nor its files`);
    // Also gives a root made before quotas its limit.
    await this.#space.limitForStart(rootfs, this.#templateRoot(r.template), r.limits.diskMb);
    // The agent of today: nothing in memory maps an older one.
    await this.#prepareRoot(key, { install: true });
    await this.#d.runtime.start(key, this.#spec(r, key));
  }

  /**
   * The host reaches the agent through `/.forkd` in the sandbox's root, which
   * the sandbox's root user (or a template's author) could otherwise fill
   * with a symlink to a host path. Once the agent listens, the directory is
   * sealed (immutable; see GuestClient#connect for why that pins the path);
   * it is unsealed only while forkd itself writes there (installing the
   * agent, CRIU re-binding the socket at a restore). Every step goes through
   * forkd-rootfs-ops (openat2, no symlinks followed): with `install` the
   * directory is replaced by a fresh one holding today's agent, whatever the
   * template left there.
   *
   * The root's own `/dev` is hidden under the runtime's tmpfs, but runc still
   * resolves paths through it (a restore names its masks' source by joining
   * `/dev/null` to the root, a start makes the tmpfs's mount point): it is
   * made an empty real directory first (the same process), so a template
   * that shaped it changes nothing.
   */
  async #prepareRoot(key: string, opts: { install: boolean }): Promise<void> {
    this.#guestAt(key).unsealing();
    const ops: RootfsOp[] = [
      ['rmtree', 'dev'],
      ['mkdir', 'dev', 0o755],
      // Mount points runc would otherwise make itself at a restore, through an idmapped root where host root
      // owns nothing (EOVERFLOW): sysfs hides them, so whatever a template put there goes.
      ['rmtree', 'sys'],
      ['mkdir', 'sys/firmware', 0o755],
      ...(opts.install
        ? ([
            ['rmtree', GUEST_DIR],
            ['mkdir', GUEST_DIR, 0o700],
            ['install', this.#d.guestBinary, `${GUEST_DIR}/init`, 0o755],
          ] as RootfsOp[])
        : ([['unseal', GUEST_DIR]] as RootfsOp[])),
    ];
    await rootfsOps(this.#rootfsOf(key), ops);
  }

  /**
   * Seals the agent's directory of an instance, then waits for the agent to
   * answer: nothing connects before the seal (see GuestClient#connect).
   * Until its socket exists the seal waits on inotify (inside
   * forkd-rootfs-ops); once it exists a connect can still be refused for a
   * moment (between the agent's bind and listen), so that is retried with
   * sleeps growing to 20 ms. A directory found tampered with fails the start
   * (FAILED_PRECONDITION) without any connect. Whether the
   * instance died meanwhile is asked of runc (a process per call) at most
   * every 250 ms.
   */
  async #waitReady(key: string): Promise<void> {
    await this.#waitAgent(key);
    this.#space.settle(this.#rootfsOf(key));
  }

  async #waitAgent(key: string): Promise<void> {
    const guest = this.#guestAt(key);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let checked = Date.now();
    let sealed = false;
    for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
      try {
        if (!sealed) {
          // Blocks (inotify) until the agent's socket exists, at most 250 ms a round.
          await rootfsOps(this.#rootfsOf(key), [['seal-agent', GUEST_DIR, AGENT_SOCKET, Math.max(1, Math.min(deadline - Date.now(), 250))]]);
          sealed = true;
          guest.sealed();
        }
        await guest.info(Math.max(1, Math.min(deadline - Date.now(), this.#guestDeadline)));
        // Restored from a dump, the agent is dumpable (see GuestClient.setDumpable); an older one does not know the request.
        await guest.setDumpable(false).catch(() => {});
        return;
      } catch (err) {
        // Tampered with: fail now, and never connect.
        if (!sealed && err instanceof ForkdError && err.code === 'FAILED_PRECONDITION') {
          guest.sealFailed(err);
          throw err;
        }
        const left = deadline - Date.now();
        if (left <= 0) {
          const e = new ForkdError('TIMEOUT', `guest agent of ${key} did not become ready`, undefined, { cause: err });
          if (!sealed) guest.sealFailed(e);
          throw e;
        }
        if (sealed) await sleep(Math.min(delay, left));
        if (Date.now() - checked >= 250) {
          checked = Date.now();
          const st = await this.#d.runtime.state(key);
          if (st.status === 'stopped' || st.status === 'missing') {
            const e = new ForkdError('INTERNAL', `sandbox ${key} exited during start`);
            if (!sealed) guest.sealFailed(e);
            throw e;
          }
        }
      }
    }
  }

  /** The guest link of a sandbox (no liveness check; see `guest`). */
  guestClient(id: string): GuestClient {
    return this.#guestAt(this.#key(id));
  }

  #guestAt(key: string): GuestClient {
    let g = this.#guests.get(key);
    if (!g) {
      const root = this.#rootfsOf(key);
      g = new GuestClient(join(root, GUEST_DIR, AGENT_SOCKET), { verify: () => rootfsOps(root, [['check-agent', GUEST_DIR, AGENT_SOCKET]]).then(() => {}), deadlineMs: this.#guestDeadline });
      this.#guests.set(key, g);
    }
    return g;
  }

  /**
   * The guest link of a sandbox, for every exec/file call: counts as
   * activity, and a paused (hibernated) sandbox is resumed transparently.
   */
  async guest(id: string): Promise<GuestClient> {
    let r = this.#record(id);
    if (r.state === 'paused') {
      await this.resume(id);
      r = this.#record(id);
    }
    if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    this.markActive(id);
    return this.guestClient(id);
  }

  /** A connection to a port inside the sandbox; a hibernated one is resumed first, and traffic counts as activity. */
  async connectPort(id: string, port: number): Promise<PortConnection> {
    await this.guest(id);
    const c = this.#d.network.connect(this.#key(id), port);
    const tick = setInterval(() => this.markActive(id), 10_000);
    void c.done.finally(() => clearInterval(tick));
    return c;
  }

  /**
   * Starts a process and reports its exit with OOM attribution: the kernel
   * says only SIGKILL, the sandbox's cgroup says whether the OOM killer did it.
   */
  async spawn(id: string, opts: SpawnOptions, handlers: OutputHandlers = {}): Promise<{ process: ProcessHandle; exit: Promise<ExecExit | null> }> {
    const guest = await this.guest(id);
    const key = this.#key(id);
    const before = await this.#d.runtime.usage(key).catch(() => undefined);
    const gp = await guest.spawn({ ...opts, env: { ...this.#record(id).env, ...opts.env } }, handlers);
    return this.#session(id, key, gp, handlers, before);
  }

  async attach(id: string, sel: { pid: number } | { tag: string }, handlers: OutputHandlers = {}): Promise<{ process: ProcessHandle; exit: Promise<ExecExit | null> }> {
    const guest = await this.guest(id);
    const key = this.#key(id);
    const before = await this.#d.runtime.usage(key).catch(() => undefined);
    const gp = await guest.attach(sel, handlers);
    return this.#session(id, key, gp, handlers, before);
  }

  /** A stream that survives snapshots, pauses and rewinds (see ProcessSession). */
  #session(id: string, key: string, gp: GuestProcess, handlers: OutputHandlers, before: ResourceUsage | undefined): { process: ProcessHandle; exit: Promise<ExecExit | null> } {
    const session = new ProcessSession(this.#sessionHost, id, key, gp, handlers);
    return { process: session, exit: this.#withOom(id, session, before) };
  }

  /** A directory watch that is re-opened after every snapshot, pause or rewind. */
  async watch(id: string, path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<WatchHandle> {
    const guest = await this.guest(id);
    return watchSession(this.#sessionHost, id, await guest.watch(path, recursive, onEvent), (g) => g.watch(path, recursive, onEvent));
  }

  readonly #sessionHost = {
    reattachPoint: (id: string, signal: AbortSignal) => this.#reattachPoint(id, signal),
    wake: async (id: string) => {
      await this.guest(id);
    },
    warn: (message: string, fields: Record<string, unknown>) => this.#d.logger.warn(message, fields),
  };

  async #reattachPoint(id: string, signal: AbortSignal): Promise<{ guest: GuestClient; key: string }> {
    const aborted = new Promise<never>((_, reject) => {
      const fail = () => reject(new ForkdError('CANCELLED', 'the stream was closed'));
      if (signal.aborted) fail();
      else signal.addEventListener('abort', fail, { once: true });
    });
    aborted.catch(() => {});
    for (;;) {
      await Promise.race([this.#reattach.opened(id), aborted]);
      const r = this.#d.store.getSandbox(id);
      if (!r || r.state === 'stopping' || r.state === 'deleted') throw new ForkdError('NOT_FOUND', `sandbox ${id} was deleted`);
      if (r.state === 'running') {
        const key = r.instance ?? r.id;
        return { guest: this.#guestAt(key), key };
      }
      if (r.state !== 'paused' && r.state !== 'creating') throw new ForkdError('UNAVAILABLE', `sandbox ${id} is ${r.state}`);
      // Paused: the stream stays open and goes on when something resumes it (its own input does).
      await Promise.race([this.#reattach.changed(id), aborted]);
    }
  }

  async #withOom(id: string, p: { done: Promise<ProcessExit | null> }, before: ResourceUsage | undefined): Promise<ExecExit | null> {
    const exit = await p.done;
    if (!exit) return null;
    let oomKilled = false;
    if (exit.signal === osConstants.signals.SIGKILL && before) {
      const after = await this.#d.runtime.usage(this.#key(id)).catch(() => undefined);
      oomKilled = !!after && after.oomKills > before.oomKills;
    }
    return { ...exit, oomKilled };
  }

  templates(): TemplateInfo[] {
    return this.#d.templates.list();
  }

  readonly #disk = new Map<string, { at: number; value: { totalBytes: number; exclusiveBytes: number } }>();

  /** Usage plus disk; disk is measured by walking the volume (~0.2 s for 300 MB), so at most every 30 s. */
  async metrics(id: string): Promise<SandboxMetrics> {
    const u = await this.usage(id);
    let d = this.#disk.get(id);
    if (!d || Date.now() - d.at > 30_000) {
      d = { at: Date.now(), value: await this.#d.storage.diskUsage(this.volume(id)) };
      this.#disk.set(id, d);
    }
    const r = this.#record(id);
    const q = await this.#space.usage(this.rootfs(id), this.#templateRoot(r.template), r.limits.diskMb);
    return { ...u, diskBytes: d.value.totalBytes, diskWrittenBytes: d.value.exclusiveBytes, ...(q ? { diskQuotaUsedBytes: q.usedBytes, diskQuotaBytes: q.limitBytes } : {}) };
  }

  async stats(): Promise<NodeStats> {
    const fs = await statfs(this.#d.storage.path('.'));
    const totals = this.#d.store.snapshotTotals();
    return {
      snapshots: totals.count,
      snapshotBytes: totals.bytes,
      poolUsedBytes: (fs.blocks - fs.bfree) * fs.bsize,
      poolSizeBytes: fs.blocks * fs.bsize,
      warmPoolHeld: this.#pool.held().size,
    };
  }

  async usage(id: string): Promise<ResourceUsage> {
    const r = this.#record(id);
    if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    return this.#d.runtime.usage(this.#key(id));
  }

  /**
   * Under the sandbox's lock: a snapshot, fork or rewind in progress finishes
   * first, and a fork from one of its snapshots has read what it needs.
   */
  async delete(id: string): Promise<void> {
    return this.#exclusive(id, () => this.#away(id, () => this.#delete(id)));
  }

  async #delete(id: string): Promise<void> {
    const r = this.#record(id);
    if (r.state !== 'stopping') this.#transition(r, 'stopping');
    // A rewind releases the instance it left after answering: that must not outlive the sandbox.
    await Promise.allSettled([...this.#background]);
    await this.#release(id);
    // Snapshots go with their sandbox; forks made from them do not need them (own volumes).
    for (const snap of this.#d.store.listSnapshots(id)) {
      this.#d.store.deleteSnapshot(snap.id);
      await this.#removeSnapshotFiles(snap.id).catch((err) => this.#d.logger.warn('snapshot cleanup failed', { snapshot: snap.id, error: String(err) }));
    }
    this.#d.store.deleteSandbox(id);
    this.#d.logger.info('sandbox deleted', { sandbox: id });
  }

  async #release(id: string): Promise<void> {
    this.#disk.delete(id);
    await this.#releaseKey(this.#key(id));
  }

  /** Processes, namespaces, cgroup and root volume of one instance. */
  async #releaseKey(key: string): Promise<void> {
    this.#guests.get(key)?.detachAll();
    this.#guests.delete(key);
    await this.#d.runtime.destroy(key);
    await this.#d.storage.remove(this.#volumeOf(key));
  }

  /**
   * Reconciles the store with reality after a (possibly unclean) restart:
   * finishes interrupted creates and deletes, marks sandboxes whose processes
   * are gone as lost, removes runtime state, volumes, snapshot directories
   * and staging directories nobody owns, and then (unless turned off) brings
   * the lost sandboxes back (see Recovery).
   */
  async recover(): Promise<void> {
    await this.#d.templates.sweep();
    const known = new Set<string>();
    const lost: SandboxRecord[] = [];
    const records = this.#d.store.listSandboxes();
    for (const r of records) known.add(r.instance ?? r.id);
    // A few at a time, each within a timeout: an agent that does not answer costs one guest deadline, and delays no other sandbox.
    await eachBounded(
      records,
      {
        concurrency: RECOVERY_CONCURRENCY,
        timeoutMs: sandboxTimeoutMs(this.#guestDeadline),
        onTimeout: (r) => this.#d.logger.warn('start-up check of a sandbox overran its timeout; going on without it', { sandbox: r.id }),
        onError: (r, err) => this.#d.logger.warn('start-up check of a sandbox failed', { sandbox: r.id, error: String(err) }),
      },
      (r) => this.#checkAtStart(r, lost),
    );
    await this.#sweepAtStart(known, lost);
  }

  /** recover()'s look at one sandbox: finishes an interrupted create or delete, or finds it lost. */
  async #checkAtStart(r: SandboxRecord, lost: SandboxRecord[]): Promise<void> {
    const key = r.instance ?? r.id;
    if (r.state === 'creating' || r.state === 'stopping') {
      await this.#release(r.id).catch((err) => this.#d.logger.warn('cleanup failed', { sandbox: r.id, error: String(err) }));
      this.#d.store.deleteSandbox(r.id);
      return;
    }
    if (r.state === 'paused') {
      // Crashed between recording the pause and stopping the frozen processes.
      if ((await this.#d.runtime.state(key)).status !== 'missing') await this.#d.runtime.destroy(key).catch(() => {});
      return;
    }
    if (r.state === 'running') {
      let st = await this.#d.runtime.state(key);
      // Crashed mid-snapshot (or mid-rewind, before the switch): the sandbox is still frozen.
      if (st.status === 'paused') {
        await this.#d.runtime.thaw(key).catch(() => {});
        st = await this.#d.runtime.state(key);
      }
      let ok = st.status === 'running';
      if (ok) ok = await this.#guestAt(key).info().then(() => true, () => false);
      // A root from before quotas, or left with its start headroom by a crash, gets its exact limit.
      if (ok) await this.#space.apply(this.#rootfsOf(key), this.#templateRoot(r.template), r.limits.diskMb).catch((err: unknown) => this.#d.logger.warn('disk quota not applied', { sandbox: r.id, error: String(err) }));
      if (!ok) {
        this.#recovery.markLost(r, st.status === 'running' ? 'its agent did not answer when the daemon started' : LOST_AT_START);
        lost.push(r);
      }
    }
    // Lost earlier and not brought back (recovery off, or it failed): its runc state is cleaned below.
    else if (this.#recovery.isLost(r)) lost.push(r);
  }

  /** recover()'s second half: what no record owns goes, then lost sandboxes come back. */
  async #sweepAtStart(known: Set<string>, lost: SandboxRecord[]): Promise<void> {
    const pooled = this.#pool.held();
    for (const id of await this.#d.runtime.list()) {
      if (!known.has(id) && !pooled.has(id)) await this.#d.runtime.destroy(id).catch(() => {});
    }
    for (const key of await this.#d.storage.list('sandboxes')) {
      const id = key.split('/')[1] ?? '';
      if (!known.has(id) && !pooled.has(id)) await this.#d.storage.remove(key).catch(() => {});
    }
    const stagedKept = new Set<string>();
    // Half-made snapshots (crash before the rename) and ones whose record never landed.
    // Instances a crashed rewind left (the target not yet switched to, or the state left) went above.
    for (const key of await this.#d.storage.list('snapshots')) {
      const name = key.split('/')[1] ?? '';
      const rec = name.startsWith('.tmp-') ? undefined : this.#d.store.getSnapshot(name);
      if (!rec) await this.#removeSnapshotFiles(name).catch(() => {});
      else {
        await this.#finishStore(rec);
        const staged = await stagedPath(join(this.snapshotDir(name), STAGED_MARKER));
        if (staged) stagedKept.add(staged);
      }
    }
    if (this.#d.stagingDir) await sweepStaging(this.#d.stagingDir, stagedKept, this.#d.logger);
    // The dead processes' runc state, cgroup and namespace; their root volumes stay.
    for (const r of lost) await this.#d.runtime.destroy(this.#key(r.id)).catch((err) => this.#d.logger.warn('cleanup failed', { sandbox: r.id, error: String(err) }));
    if (this.#d.recoverOnStart === false) return;
    // Before the API listens, a few at a time (a host that ran them all before can run them again, not restore
    // them all at once), each within a timeout: one that overruns goes on under its lock, so calls on it wait
    // for it while the daemon starts.
    await eachBounded(
      lost,
      {
        concurrency: RECOVERY_CONCURRENCY,
        timeoutMs: sandboxTimeoutMs(this.#guestDeadline),
        onTimeout: (r) => this.#d.logger.warn('recovery of a sandbox overran its timeout; the daemon starts without waiting for it', { sandbox: r.id }),
        onError: () => {},
      },
      (r) => this.#exclusive(r.id, () => this.#recovery.revive(r, { trigger: 'start' })),
    );
  }

  get #guestDeadline(): number {
    return this.#d.guestDeadlineMs ?? GUEST_DEADLINE_MS;
  }

  /** Recovery: a snapshot recorded with its images still in staging when the daemon stopped. */
  async #finishStore(rec: SnapshotRecord): Promise<void> {
    const marker = join(this.snapshotDir(rec.id), STAGED_MARKER);
    const staging = (await readFile(marker, 'utf8').catch(() => '')).trim();
    if (!staging) return;
    if (this.#d.stagingDir && dirname(staging) === resolve(this.#d.stagingDir) && existsSync(staging)) {
      this.#storeLater(rec, staging);
      return;
    }
    // The host rebooted before they were stored: a snapshot without memory cannot be restored.
    this.#d.logger.error('snapshot lost its memory images (host reboot before they were stored)', { snapshot: rec.id, sandbox: rec.sandboxId });
    this.#d.store.deleteSnapshot(rec.id);
    await this.#removeSnapshotFiles(rec.id).catch(() => {});
  }

  readonly #locks = new Map<string, Promise<unknown>>();

  /** Lifecycle operations on one sandbox run one at a time. */
  /** The guest may be out of reach for all of `fn`: client-facing streams wait (see ReattachGate). */
  async #away<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const reopen = this.#reattach.hold(id);
    try {
      return await fn();
    } finally {
      reopen();
    }
  }

  async #exclusive<T>(id: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.#locks.get(id) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => {});
    this.#locks.set(id, tail);
    try {
      return await next;
    } finally {
      if (this.#locks.get(id) === tail) this.#locks.delete(id);
    }
  }

  snapshotDir(snapId: string): string {
    return this.#d.storage.path(`snapshots/${snapId}`);
  }

  #spec(r: SandboxRecord, key: string) {
    return { rootfs: this.#rootfsOf(key), hostname: r.id, limits: r.limits, init: GUEST_INIT, env: {}, idmap: r.idmap === undefined ? undefined : { hostId: r.idmap, size: ID_RANGE_SIZE } };
  }

  /**
   * Memory + filesystem of a running sandbox at one instant (CRIU dump and a
   * read-only Btrfs snapshot of its root while it is frozen; see
   * Runtime.checkpoint). With leaveRunning it runs on; otherwise it stays
   * frozen for the caller (pause, rewind). Written under `.tmp-*` and renamed
   * into place, so a crash never leaves a half-made snapshot that looks whole.
   */
  async #takeSnapshot(r: SandboxRecord, opts: { name?: string | undefined; reason: SnapshotRecord['reason']; leaveRunning: boolean; deferStore?: boolean }): Promise<SnapshotRecord> {
    // A pause or rewind keeps state that exists already (and frees memory): those may use the headroom the threshold keeps.
    if (opts.reason !== 'pause' && opts.reason !== 'rewind') this.#space.checkFree('take a snapshot');
    const snapId = newSnapshotId();
    const key = this.#key(r.id);
    const tmpKey = `snapshots/.tmp-${snapId}`;
    const tmp = this.#d.storage.path(tmpKey);
    await mkdir(tmp, { recursive: true });
    // Dump into memory (tmpfs) when it fits comfortably: the freeze then lasts
    // as long as a RAM copy, and the pool write with page sharing comes after.
    const staging = (await this.#canStage(r.id)) ? join(this.#d.stagingDir!, snapId) : undefined;
    const previous = this.#d.store.listSnapshots(r.id).pop()?.id ?? r.forkedFrom;
    const deferred = !!(staging && opts.deferStore);
    let stats;
    let memoryBytes = 0;
    try {
      const reopen = this.#reattach.hold(r.id);
      // An agent that never answers cannot be dumped (it stays non-dumpable): say so rather than let CRIU fail.
      await this.#guestAt(key)
        .setDumpable(true)
        .catch((err: unknown) => {
          if (err instanceof ForkdError && err.code === 'TIMEOUT') throw err;
        });
      const release = await this.#guestAt(key).quiesce();
      try {
        stats = await this.#d.runtime.checkpoint(key, {
          imagesDir: staging ?? join(tmp, 'memory'),
          workDir: join(tmp, 'work'),
          leaveRunning: opts.leaveRunning,
          whileFrozen: await this.#d.storage.commitCommand(`${tmpKey}/rootfs`, this.#volumeOf(key)),
        });
        crashPoint('snapshot:dumped');
      } finally {
        release();
        reopen();
        if (opts.leaveRunning) await this.#guestAt(key).setDumpable(false).catch(() => {});
      }
      if (deferred) {
        // Written before the rename: a snapshot dir without memory always says where it is.
        await writeFile(join(tmp, STAGED_MARKER), staging!);
      } else if (staging) {
        memoryBytes = (await this.#storeImages(staging, snapId, tmp, previous)).bytesWritten;
        this.#freeStaging(staging);
      } else {
        memoryBytes = Number((await exec('du', ['-sb', join(tmp, 'memory')])).stdout.split('\t')[0]) || 0;
      }
    } catch (err) {
      await this.#removeSnapshotFiles(`.tmp-${snapId}`).catch(() => {});
      if (staging) await rm(staging, { recursive: true, force: true });
      throw err;
    }
    await rename(tmp, this.snapshotDir(snapId));
    const rec: SnapshotRecord = {
      id: snapId,
      sandboxId: r.id,
      ...(opts.name ? { name: opts.name } : {}),
      createdAt: new Date().toISOString(),
      frozenMs: ms(stats.frozenMs),
      sizeBytes: memoryBytes,
      ...(previous ? { parentId: previous } : {}),
      pinned: !!opts.name,
      reason: opts.reason,
    };
    this.#d.store.insertSnapshot(rec);
    this.#d.logger.info('snapshot taken', { sandbox: r.id, snapshot: snapId, reason: opts.reason, frozenMs: rec.frozenMs, sizeBytes: rec.sizeBytes, deferred });
    if (deferred) this.#storeLater(rec, staging!);
    return rec;
  }

  /** Freeing 100 MB of tmpfs takes ~15 ms that nobody needs to wait for (a staging name is never reused). */
  #freeStaging(staging: string): void {
    void rm(staging, { recursive: true, force: true }).catch(() => {});
  }

  /** Staging → pool, sharing pages with the previous snapshot (once that one is stored itself). */
  async #storeImages(staging: string, snapId: string, dir: string, previous: string | undefined) {
    if (previous) await this.#storing.get(previous);
    const prevDir = previous ? join(this.snapshotDir(previous), 'memory') : undefined;
    const stats = await storeImages(staging, join(dir, 'memory'), prevDir && existsSync(prevDir) ? prevDir : undefined);
    this.#d.logger.debug('snapshot stored', { snapshot: snapId, ...stats });
    return stats;
  }

  /**
   * A rewind must not wait for the state it leaves to be stored with page
   * sharing (~50-100 ms of page compares): its snapshot is recorded as soon
   * as it is dumped, with its images still in staging (tmpfs) and a marker
   * saying so; everything that reads or removes them waits for this. A
   * daemon crash meanwhile leaves the staging dir in place and recovery
   * finishes the move; only a host reboot (which takes every running
   * sandbox's memory with it too) can lose them.
   */
  #storeLater(rec: SnapshotRecord, staging: string): void {
    const dir = this.snapshotDir(rec.id);
    const p = this.#storeImages(staging, rec.id, dir, rec.parentId)
      .then(async (stats) => {
        this.#d.store.setSnapshotSize(rec.id, stats.bytesWritten);
        // Marker first: a marker without its staging dir means the images are lost (see #finishStore).
        await rm(join(dir, STAGED_MARKER), { force: true });
        this.#freeStaging(staging);
      })
      .catch((err) => this.#d.logger.error('snapshot images could not be stored', { snapshot: rec.id, error: String(err) }))
      .finally(() => this.#storing.delete(rec.id));
    this.#storing.set(rec.id, p);
  }

  /** Staging in tmpfs only while the sandbox's memory is well below what the host has free. */
  async #canStage(id: string): Promise<boolean> {
    if (!this.#d.stagingDir) return false;
    // The dump and the action script's hook file go in there: still root's own private directory (see staging-dir.ts).
    await checkStagingDir(this.#d.stagingDir);
    const used = (await this.#d.runtime.usage(this.#key(id)).catch(() => undefined))?.memoryBytes ?? Number.POSITIVE_INFINITY;
    const m = /MemAvailable:\s+(\d+) kB/.exec(await readFile('/proc/meminfo', 'utf8').catch(() => ''));
    return used < (Number(m?.[1] ?? 0) * 1024) / 3;
  }

  async #removeSnapshotFiles(dirName: string): Promise<void> {
    await this.#storing.get(dirName);
    await this.#d.storage.remove(`snapshots/${dirName}/rootfs`);
    await rm(this.#d.storage.path(`snapshots/${dirName}`), { recursive: true, force: true });
  }

  /**
   * Restores a sandbox's processes from a snapshot into the instance `key`
   * (see #waitReady for when it answers). Its root volume is first replaced
   * by a writable copy of the snapshot's root, so memory and files match
   * whatever happened to the volume before (an interrupted pause included).
   */
  async #restoreInto(key: string, r: SandboxRecord, snap: SnapshotRecord): Promise<void> {
    await this.#storing.get(snap.id);
    // A store that failed leaves images half-patched: restoring them would bring back wrong memory.
    if (existsSync(join(this.snapshotDir(snap.id), STAGED_MARKER))) throw new ForkdError('UNAVAILABLE', `the memory images of snapshot ${snap.id} could not be stored (see the node's log); it cannot be restored until a restart retries`);
    const volume = this.#volumeOf(key);
    await this.#d.storage.remove(volume);
    await this.#d.storage.prepare(volume, `snapshots/${snap.id}/rootfs`);
    // Room for forkd and CRIU to write, even into a root that was at its quota.
    await this.#space.limitForStart(this.#d.storage.path(volume), this.#templateRoot(r.template), r.limits.diskMb);
    await this.#prepareRoot(key, { install: false });
    const release = await this.#guestAt(key).quiesce();
    try {
      const st = await this.#d.runtime.restore(key, this.#spec(r, key), { imagesDir: join(this.snapshotDir(snap.id), 'memory') });
      // The images decide (a fork's are its parent's): the record follows.
      this.#recordIdmap(r, st.idmap);
    } finally {
      release();
    }
  }

  #snapshotRecord(snapId: string): SnapshotRecord {
    const s = this.#d.store.getSnapshot(snapId);
    if (!s) throw new ForkdError('NOT_FOUND', `snapshot ${snapId} not found`);
    return s;
  }

  async snapshot(id: string, opts: { name?: string | undefined } = {}): Promise<SnapshotInfo> {
    return this.#exclusive(id, async () => {
      const r = this.#record(id);
      if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}; only a running sandbox can be snapshotted`);
      if (opts.name && this.#d.store.listSnapshots(id).some((s) => s.name === opts.name)) throw new ForkdError('ALREADY_EXISTS', `sandbox ${id} already has a snapshot named ${opts.name}`);
      return toSnapshotInfo(await this.#takeSnapshot(r, { name: opts.name, reason: 'manual', leaveRunning: true }));
    });
  }

  timeline(id: string): SnapshotInfo[] {
    this.#record(id);
    return this.#d.store.listSnapshots(id).map(toSnapshotInfo);
  }

  getSnapshot(snapId: string): SnapshotInfo {
    return toSnapshotInfo(this.#snapshotRecord(snapId));
  }

  /** Pause: snapshot, then stop. The sandbox uses no CPU or memory until resumed. */
  async pause(id: string): Promise<SandboxInfo> {
    return this.#exclusive(id, () => this.#away(id, () => this.#pause(id)));
  }

  async #pause(id: string): Promise<SandboxInfo> {
    {
      const r = this.#record(id);
      if (r.state === 'paused') return toInfo(r);
      if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
      const snap = await this.#takeSnapshot(r, { reason: 'pause', leaveRunning: false });
      this.#d.store.setResumeFrom(id, snap.id);
      this.#transition(r, 'paused');
      crashPoint('pause:recorded');
      // Only now that the snapshot is recorded do the (frozen) processes go.
      await this.#d.runtime.destroy(this.#key(id));
      return toInfo(this.#record(id));
    }
  }

  /** A lost sandbox brought back by resume or rewind (see Recovery.revive). */
  async #revived(r: SandboxRecord, opts: { trigger: 'resume' | 'rewind'; snapshot?: SnapshotRecord }): Promise<SandboxInfo> {
    await this.#recovery.revive(r, opts);
    this.markActive(r.id);
    return toInfo(this.#record(r.id));
  }

  /**
   * Reconciler: a running sandbox whose cgroup has no task left (its init
   * was killed, by the OOM killer or from outside) is confirmed dead,
   * marked lost and brought back. Returns whether it was found dead.
   */
  async reviveIfDead(id: string): Promise<boolean> {
    const u = await this.#d.runtime.usage(this.#key(id)).catch(() => undefined);
    if (u && u.pids > 0) return false;
    return this.#exclusive(id, async () => {
      const r = this.#d.store.getSandbox(id);
      return r?.state === 'running' ? this.#recovery.noticeDeath(r) : false;
    });
  }

  async resume(id: string): Promise<SandboxInfo> {
    return this.#exclusive(id, () => this.#away(id, () => this.#resume(id)));
  }

  async #resume(id: string): Promise<SandboxInfo> {
    const r = this.#record(id);
    if (r.state === 'running') return toInfo(r);
    if (this.#recovery.isLost(r)) return this.#revived(r, { trigger: 'resume' });
    if (r.state !== 'paused' || !r.resumeFrom) throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    const key = this.#key(id);
    // Held while the restore runs (the record says paused until it is done), so two resumes cannot both take the last room.
    const ticket = this.#admission.admit(commitOf(r.limits), [id]);
    try {
      await this.#restoreInto(key, r, this.#snapshotRecord(r.resumeFrom));
      await this.#waitReady(key);
      this.#transition(r, 'running');
    } finally {
      ticket.release();
    }
    this.#d.store.setOrigin(id, { at: new Date().toISOString(), snapshot: r.resumeFrom });
    this.#d.store.setResumeFrom(id, undefined);
    // A lifetime that ran out starts anew; a hibernated sandbox keeps the one it had.
    if (r.policy?.timeoutSeconds && !r.policy.expiresAt) this.#d.store.setPolicy(id, freshLifetime(r.policy));
    this.markActive(id);
    return toInfo(this.#record(id));
  }

  /**
   * Rewind in place to any snapshot of the sandbox's timeline. Non-destructive:
   * the state being left is snapshotted first, so one can rewind forward again.
   * A running sandbox is dumped and the target restored at the same time: the
   * target comes up as a new instance (own runtime key, root volume and
   * network namespace, so nothing collides with the frozen tree being dumped),
   * and one store write switches the sandbox to it once both are done. A crash
   * before the switch leaves the old instance (thawed by recovery), after it
   * the new one; recovery removes the other.
   */
  async rewind(id: string, snapId: string): Promise<SandboxInfo> {
    return this.#exclusive(id, () => this.#away(id, () => this.#rewind(id, snapId)));
  }

  async #rewind(id: string, snapId: string): Promise<SandboxInfo> {
    {
      const r = this.#record(id);
      const snap = this.#snapshotRecord(snapId);
      if (snap.sandboxId !== id) throw new ForkdError('INVALID_ARGUMENT', `snapshot ${snapId} is not in the timeline of ${id}`);
      // Nothing runs to snapshot: the target is restored in place of the processes lost.
      if (this.#recovery.isLost(r)) return this.#revived(r, { trigger: 'rewind', snapshot: snap });
      if (r.state === 'paused') {
        this.#d.store.setResumeFrom(id, snapId);
        crashPoint('rewind:recorded');
        return this.#resume(id);
      }
      if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
      const old = this.#key(id);
      const next = `${id}.${randomBytes(4).toString('hex')}`;
      const [left, target] = await Promise.allSettled([this.#takeSnapshot(r, { reason: 'rewind', leaveRunning: false, deferStore: true }), this.#restoreInto(next, r, snap)]);
      // Nothing is lost by giving up: the old instance runs on, the state it left (if dumped) stays a snapshot.
      const giveUp = async (err: unknown): Promise<never> => {
        this.#d.store.setInstance(id, old);
        await this.#releaseKey(next).catch(() => {});
        await this.#d.runtime.thaw(old).catch(() => {});
        throw err;
      };
      const failed = [left, target].find((x): x is PromiseRejectedResult => x.status === 'rejected');
      if (failed) return giveUp(failed.reason);
      crashPoint('rewind:restored');
      // Snapshots older than this instant (the state left included) are no longer its line (see Recovery.candidates).
      this.#d.store.setInstance(id, next, { at: new Date().toISOString(), snapshot: snapId });
      crashPoint('rewind:switched');
      await this.#waitReady(next).catch(giveUp);
      this.markActive(id);
      this.#d.logger.info('sandbox rewound', { sandbox: id, snapshot: snapId, instance: next });
      const done = this.#releaseKey(old).catch((err) => this.#d.logger.warn('release of the instance left failed', { sandbox: id, instance: old, error: String(err) }));
      this.#background.add(done);
      void done.finally(() => this.#background.delete(done));
      return toInfo(this.#record(id));
    }
  }

  /**
   * Fork: new sandboxes from a snapshot, or from a running sandbox (an
   * implicit snapshot; the parent keeps running). Each gets its own id, root
   * volume, cgroup and network namespace and diverges independently.
   */
  async fork(source: string, count = 1, claim?: (id: string) => void): Promise<SandboxInfo[]> {
    if (!Number.isInteger(count) || count < 1 || count > 64) throw new ForkdError('INVALID_ARGUMENT', 'count must be between 1 and 64');
    const fromSnapshot = source.startsWith('snap-');
    const owner = fromSnapshot ? this.#snapshotRecord(source).sandboxId : source;
    // Early, so a refused live fork takes no snapshot; checked again where the forks are recorded.
    this.#admission.check(commitOf(this.#d.store.getSandbox(owner)?.limits ?? Limits.parse({}), count));
    const space = this.#space.checkFree(count > 1 ? `fork ${count} sandboxes` : 'fork a sandbox');
    // The owner's lock is held until every fork has its root volume and its
    // restore has read the images (a lazy restore's page server keeps them
    // open), so a delete of the snapshot or of its sandbox waits for that.
    // Taken in the caller's turn (nothing is awaited before): a delete asked for after the fork waits for it.
    const forks = await this.#exclusive(owner, async () => {
      let snap: SnapshotRecord;
      if (fromSnapshot) snap = this.#snapshotRecord(source);
      else {
        const r = this.#record(source);
        if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${source} is ${r.state}; fork one of its snapshots instead`);
        snap = await this.#takeSnapshot(r, { reason: 'fork', leaveRunning: true });
      }
      const parent = this.#d.store.getSandbox(snap.sandboxId);
      this.#admission.check(commitOf(parent?.limits ?? Limits.parse({}), count));
      this.#space.admit(space, this.#space.diskMbOf(parent?.limits ?? {}) * count, this.#d.store.listSandboxes());
      const started = Array.from({ length: count }, () => {
        const rec: SandboxRecord = {
          id: newSandboxId(),
          template: parent?.template ?? 'base',
          state: 'creating',
          limits: parent?.limits ?? Limits.parse({}),
          env: parent?.env ?? {},
          metadata: parent?.metadata ?? {},
          createdAt: new Date().toISOString(),
          forkedFrom: snap.id,
          policy: freshLifetime(parent?.policy),
        };
        claim?.(rec.id);
        this.#d.store.insertSandbox(rec);
        let restored!: () => void;
        const imagesRead = new Promise<void>((resolve) => (restored = resolve));
        // Each fork holds its own lock until it runs: a delete of a listed `creating` fork waits.
        const done = this.#exclusive(rec.id, async () => {
          try {
            await this.#restoreInto(rec.id, rec, snap).finally(restored);
            await this.#waitReady(rec.id);
            crashPoint('fork:restored');
            this.#transition(rec, 'running');
            this.markActive(rec.id);
            return toInfo(rec);
          } catch (err) {
            await this.#abandon(rec.id);
            throw err;
          }
        });
        // Awaited below, after the owner's lock: meanwhile a failure must not count as unhandled.
        done.catch(() => {});
        return { done, imagesRead };
      });
      await Promise.all(started.map((f) => f.imagesRead));
      return started;
    });
    // All or nothing: a caller told of a failure has no ids to clean up after, so no fork is left running.
    const results = await Promise.allSettled(forks.map((f) => f.done));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (!failed) return results.map((r) => (r as PromiseFulfilledResult<SandboxInfo>).value);
    for (const r of results) if (r.status === 'fulfilled') await this.delete(r.value.id).catch((err) => this.#d.logger.warn('fork cleanup failed', { sandbox: r.value.id, error: String(err) }));
    throw failed.reason;
  }

  /** A fork or create that did not make it: its instance and record go. */
  async #abandon(id: string): Promise<void> {
    await this.#release(id).catch(() => {});
    this.#d.store.deleteSandbox(id);
  }

  /** The fork tree below a sandbox: its snapshots and the sandboxes forked from them, recursively. */
  tree(id: string): ForkTree {
    const r = this.#record(id);
    const node = (rec: SandboxRecord): ForkTree => ({
      sandbox: toInfo(rec),
      children: this.#d.store.listSnapshots(rec.id).flatMap((s) => this.#d.store.listForks(s.id).map(node)),
    });
    return node(r);
  }

  /** Pinned snapshots are never thinned by the timeline policy (named ones start pinned). Under the owner's lock. */
  async pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo> {
    return this.#exclusive(this.#snapshotRecord(snapId).sandboxId, async () => {
      this.#snapshotRecord(snapId);
      this.#d.store.setPinned(snapId, pinned);
      return toSnapshotInfo(this.#snapshotRecord(snapId));
    });
  }

  /** Under the owner's lock, so it never removes images a pause, rewind or fork is reading. */
  async deleteSnapshot(snapId: string): Promise<void> {
    return this.#exclusive(this.#snapshotRecord(snapId).sandboxId, async () => {
      const s = this.#snapshotRecord(snapId);
      const owner = this.#d.store.getSandbox(s.sandboxId);
      if (owner?.resumeFrom === snapId) throw new ForkdError('FAILED_PRECONDITION', `snapshot ${snapId} holds the paused state of ${s.sandboxId}`);
      this.#d.store.deleteSnapshot(snapId);
      await this.#removeSnapshotFiles(snapId);
    });
  }

  /** Activity bookkeeping and the policy hooks the reconciler drives. */
  markActive(id: string, at = Date.now()): void {
    this.#activity.set(id, at);
  }

  lastActive(id: string): number | undefined {
    return this.#activity.get(id);
  }

  openConnections(id: string): number {
    return this.#guests.get(this.#key(id))?.openConnections ?? 0;
  }

  records(): SandboxRecord[] {
    return this.#d.store.listSandboxes();
  }

  recordOf(id: string): SandboxRecord | undefined {
    return this.#d.store.getSandbox(id);
  }

  snapshotRecords(id: string): SnapshotRecord[] {
    return this.#d.store.listSnapshots(id);
  }

  /** Sets the sandbox's lifetime to end `seconds` from now (0: no lifetime). Returns the updated sandbox. */
  async setTimeout(id: string, seconds: number): Promise<SandboxInfo> {
    return this.#exclusive(id, async () => {
      const r = this.#record(id);
      if (r.state !== 'running' && r.state !== 'paused') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
      const policy: SandboxPolicy = { ...r.policy, timeoutSeconds: seconds || undefined, expiresAt: seconds ? new Date(Date.now() + seconds * 1000).toISOString() : undefined };
      this.#d.store.setPolicy(id, policy);
      return toInfo(this.#record(id));
    });
  }

  /** The lifetime ran out: pause (the lifetime is spent until a resume) or delete. */
  async timeOut(id: string): Promise<void> {
    const r = this.#record(id);
    this.#d.logger.info('sandbox timed out', { sandbox: id, onTimeout: r.policy?.onTimeout ?? 'pause' });
    if (r.policy?.onTimeout === 'kill') return this.delete(id);
    if (r.state === 'running') await this.pause(id);
    const now = this.#d.store.getSandbox(id);
    if (now?.policy) this.#d.store.setPolicy(id, { ...now.policy, expiresAt: undefined });
  }

  /** Effective policy: the sandbox's overrides over the server's defaults. */
  policy(r: SandboxRecord): { timeline: TimelinePolicy; idleMs: number } {
    const base = this.#d.timeline ?? DEFAULT_TIMELINE_POLICY;
    const interval = r.policy?.snapshotIntervalSeconds;
    const idle = r.policy?.idleTimeoutSeconds;
    return {
      timeline: interval === undefined ? base : { ...base, intervalMs: interval * 1000 },
      idleMs: idle === undefined ? (this.#d.idleTimeoutMs ?? 0) : idle * 1000,
    };
  }

  /** A rolling-timeline snapshot (unnamed, thinnable), if the sandbox is still running. */
  async policySnapshot(id: string): Promise<void> {
    await this.#exclusive(id, async () => {
      const cur = this.#record(id);
      if (cur.state !== 'running') return;
      await this.#takeSnapshot(cur, { reason: 'policy', leaveRunning: true }).catch((err: unknown) => {
        // A full pool skips the timeline's snapshot; the sandbox runs on and the next tick tries again.
        if (!(err instanceof ForkdError && err.code === 'RESOURCE_EXHAUSTED')) throw err;
        this.#d.logger.warn('timeline snapshot skipped', { sandbox: id, error: err.message });
        this.#d.onEvent?.({ at: new Date().toISOString(), sandboxId: id, operation: 'snapshot-skipped', detail: err.message, code: err.code, durationMs: 0 });
      });
    });
  }

  /** One reconciler pass (see Reconciler); tests call it with a chosen clock. */
  tick(now = Date.now()): Promise<void> {
    return this.#reconciler.tick(now);
  }

  buildTemplate(req: BuildTemplateRequest, progress: (line: string) => void | Promise<void> = () => {}, claim?: (id: string) => void): Promise<TemplateInfo> {
    return buildTemplate(this, this.#d.templates, req, progress, claim);
  }

  async deleteTemplate(name: string): Promise<void> {
    if (name === 'base') throw new ForkdError('FAILED_PRECONDITION', 'the base template cannot be deleted');
    if (!this.#d.templates.get(name)) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
    await this.#d.templates.remove(name);
  }
}
