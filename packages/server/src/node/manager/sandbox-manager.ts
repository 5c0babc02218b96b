import {
  CreateSandboxRequest,
  ForkdError,
  type SandboxInfo,
  type SandboxMetrics,
  type SnapshotInfo,
  type TemplateInfo,
  type WatchEvent,
  type SetNetworkRequest,
} from '@forkd/protocol';
import type { ClaimSandbox, ForkOptions, ForkTree, ImportSnapshotOptions, NodeStats, OutputHandlers, PauseOptions, PortConnection, ProcessSelector, ProcessStream, ResumeOptions, ResumePoint, SnapshotExport, SpawnOptions, TemplateExport, WatchHandle } from '../../node-contract/node-types.js';
import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import type { GuestClient } from '../guest/guest-client.js';
import type { ExitWatch, ResourceUsage } from '../runtime/runtime.js';
import type { WarmPool } from './warm-pool.js';
import { sandboxTimeoutMs } from './sandbox-timeout.js';
import type { SandboxMaxima } from './sandbox-maxima.js';
import type { SandboxStreams } from './sandbox-streams.js';
import { checkAtStartUp } from './start-up-check.js';
import { nodeStats } from './node-stats.js';
import { forkSandboxes } from './fork.js';
import { createSandbox } from './create.js';
import { pauseSandbox, resumeSandbox } from './pause-resume.js';
import { rewindSandbox } from './rewind.js';
import type { ManagerContext } from './manager-context.js';
import type { ManagerDeps } from './manager-deps.js';
import { assembleManager, type ManagerParts } from './manager-parts.js';
import { deleteSnapshot, forkTree, pinSnapshot, snapshotSandbox } from './snapshot-ops.js';
import { policySnapshot, setLifetime, timeOut } from './lifetime.js';
import { reapplyNetworks, setNetwork } from './network-rules.js';
import { toInfo, toSnapshotInfo } from './sandbox-info.js';
import { PortConnections } from './port-connections.js';
import { sandboxMetrics } from './sandbox-metrics.js';
import { TemplateTransfer } from '../transfer/template-transfer.js';
import { exportSnapshot, type BlobTransfer } from './export-snapshot.js';
import { importSnapshot } from './import-snapshot.js';
import { exportTemplate } from './export-template.js';
import { importTemplate } from './import-template.js';

export { MAX_PORT_CONNECTIONS, MAX_PORT_CONNECTIONS_PER_SANDBOX } from './port-connections.js';
export type { ManagerDeps } from './manager-deps.js';
export type { ExecExit, ForkTree, NodeStats } from '../../node-contract/node-types.js';

/**
 * The node's sandbox lifecycle: composes Storage, Runtime and the guest link
 * behind one API, persists every state change before acting on it, and on
 * start reconciles the store with what actually runs. Policy (the
 * reconciler's pass in node/policy, template builds in node/templates)
 * sits above it, wired by node.ts, and uses only its public methods.
 */
export class SandboxManager {
  readonly #d: ManagerDeps;
  readonly #ctx: ManagerContext;
  readonly #streams: SandboxStreams;
  readonly #maxima: SandboxMaxima;
  readonly #disk: ManagerParts['diskUse'];
  readonly #guestDeadline: number;
  /** Last API use per sandbox (idle hibernation). */
  readonly #activity = new Map<string, number>();
  readonly #activityListeners = new Set<(id: string) => void>();
  readonly #ports: PortConnections;
  readonly #transfer: BlobTransfer | undefined;
  /** Template imports under way, by name (one receive of a template at a time). */
  readonly #templateImports = new Map<string, Promise<TemplateInfo>>();

  constructor(deps: ManagerDeps) {
    this.#d = deps;
    const parts = assembleManager(deps, this);
    this.#ctx = parts.ctx;
    this.#streams = parts.streams;
    this.#maxima = parts.maxima;
    this.#disk = parts.diskUse;
    this.#guestDeadline = parts.guestDeadlineMs;
    this.#ports = new PortConnections(deps.network, (id) => this.markActive(id));
    this.#transfer = deps.blobs && { blobs: deps.blobs, templates: new TemplateTransfer(deps.storage, deps.blobs, deps.logger) };
  }

  get logger(): Logger {
    return this.#d.logger;
  }

  /** The largest sandbox this node makes (FORKD_MAX_*). */
  get maxima(): SandboxMaxima {
    return this.#maxima;
  }

  /** Deadline of every guest operation; the policy pass's per-sandbox timeout follows from it (see sandboxTimeoutMs). */
  get guestDeadlineMs(): number {
    return this.#guestDeadline;
  }

  /** Starts filling the warm pool (after recovery, so orphans are gone first). */
  startWarmPool(): void {
    this.#ctx.pool.fill();
  }

  get warmPool(): WarmPool {
    return this.#ctx.pool;
  }

  /** Stops the warm pool; user sandboxes keep running. */
  async close(): Promise<void> {
    this.#ctx.hot.close();
    await this.#ctx.pool.close();
    await this.settled();
  }

  /** Resolves once the work operations left to the background is done (rewinds: release of the instance left, store of its images). */
  async settled(): Promise<void> {
    await Promise.all([...this.#ctx.background.values(), this.#ctx.files.settled(), this.#ctx.space.settled()]);
  }

  /** Storage key of a sandbox's current root volume. */
  async volume(id: string): Promise<string> {
    return this.#ctx.instances.volumeOf(await this.#ctx.instances.key(id));
  }

  /** Host path of a sandbox's current root. */
  async rootfs(id: string): Promise<string> {
    return this.#ctx.instances.rootfsOf(await this.#ctx.instances.key(id));
  }

  /** Host path of a snapshot's directory (rootfs/, memory/). */
  snapshotDir(snapId: string): string {
    return this.#ctx.files.dir(snapId);
  }

  /** A snapshot's memory images and the id range they were dumped with, as the runtime reads it from them. */
  async snapshotImages(snapId: string): Promise<{ dir: string; idmap: number | undefined }> {
    const dir = this.#ctx.files.memoryDir(snapId);
    return { dir, idmap: (await this.#d.runtime.images.idmap(dir))?.hostId };
  }

  snapshotRootfsKey(snapId: string): string {
    return this.#ctx.files.rootfsKey(snapId);
  }

  async get(id: string): Promise<SandboxInfo> {
    return toInfo(await this.#ctx.record(id));
  }

  async list(): Promise<SandboxInfo[]> {
    return (await this.#d.store.listSandboxes()).map(toInfo);
  }

  async create(input: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo> {
    return createSandbox(this.#ctx, this.#maxima, input, claim);
  }

  /** The guest link of a sandbox (no liveness check; see `guest`). */
  async guestClient(id: string): Promise<GuestClient> {
    return this.#ctx.guests.at(await this.#ctx.instances.key(id));
  }

  /**
   * The guest link of a sandbox, for every exec/file call: counts as
   * activity, a paused (hibernated) sandbox is resumed transparently, and
   * a lifecycle operation under way is waited for.
   */
  async guest(id: string): Promise<GuestClient> {
    // A call made while a snapshot, pause, resume or rewind has the guest out of reach waits for it and
    // then runs on what the sandbox is after it: an exec asked for during a rewind started on the
    // instance being replaced and was cut half-started (UNAVAILABLE).
    await this.#ctx.locks.reattach.opened(id);
    let r = await this.#ctx.record(id);
    if (r.state === 'paused') {
      await this.resume(id);
      r = await this.#ctx.record(id);
    }
    if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    this.markActive(id);
    return this.#ctx.guests.at(r.instance ?? r.id);
  }

  /** A connection to a port inside the sandbox; a hibernated one is resumed first, and traffic counts as activity. */
  async connectPort(id: string, port: number): Promise<PortConnection> {
    await this.guest(id);
    return this.#ports.open(id, await this.#ctx.instances.key(id), port);
  }

  spawn(id: string, opts: SpawnOptions, handlers: OutputHandlers = {}): Promise<ProcessStream> {
    return this.#streams.spawn(id, opts, handlers);
  }

  attach(id: string, sel: ProcessSelector, handlers: OutputHandlers = {}, resume?: ResumePoint): Promise<ProcessStream> {
    return this.#streams.attach(id, sel, handlers, resume);
  }

  watch(id: string, path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<WatchHandle> {
    return this.#streams.watch(id, path, recursive, onEvent);
  }

  async templates(): Promise<TemplateInfo[]> {
    return this.#d.templates.list();
  }

  /** Usage plus disk (sandbox-metrics.ts). */
  async metrics(id: string): Promise<SandboxMetrics> {
    return sandboxMetrics(this.#ctx, this.#d.storage, this.#disk, id, await this.usage(id));
  }

  async stats(): Promise<NodeStats> {
    return nodeStats(this.#ctx, this.#d);
  }

  async usage(id: string): Promise<ResourceUsage> {
    const r = await this.#ctx.record(id);
    if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    return this.#d.runtime.usage(r.instance ?? r.id);
  }

  /**
   * Under the sandbox's lock: a snapshot, fork or rewind in progress finishes
   * first, and a fork from one of its snapshots has read what it needs.
   */
  async delete(id: string): Promise<void> {
    return this.#ctx.locks.exclusive(id, () => this.#ctx.locks.away(id, () => this.#delete(id)));
  }

  async #delete(id: string): Promise<void> {
    const r = await this.#ctx.record(id);
    if (r.state !== 'stopping') await this.#ctx.transition(r, 'stopping');
    // A rewind releases the instance it left after answering: that must not outlive the sandbox.
    await Promise.allSettled([...this.#ctx.background.values()]);
    await this.#ctx.release(id);
    // Snapshots go with their sandbox; forks made from them do not need them (own volumes).
    for (const snap of await this.#d.store.listSnapshots(id)) {
      await this.#d.store.deleteSnapshot(snap.id);
      await this.#ctx.files.remove(snap.id).catch((err) => this.#d.logger.warn('snapshot cleanup failed', { snapshot: snap.id, error: String(err) }));
    }
    await this.#d.store.deleteSandbox(id);
    this.#activity.delete(id);
    this.#d.logger.info('sandbox deleted', { sandbox: id });
  }

  /** See start-up-check.ts; received templates half-made or no longer used go too (see TemplateTransfer.sweep). */
  async recover(): Promise<void> {
    await this.#transfer?.templates.sweep(new Set((await this.#d.store.listSandboxes()).flatMap((r) => (r.base ? [r.base] : []))));
    await checkAtStartUp({
      ...this.#ctx,
      pooled: () => this.#ctx.pool.held(),
      timeoutMs: sandboxTimeoutMs(this.#guestDeadline),
      recoverOnStart: this.#d.recoverOnStart !== false,
      exclusive: (id, fn) => this.#ctx.locks.exclusive(id, fn),
    });
  }

  async snapshot(id: string, opts: { name?: string | undefined } = {}): Promise<SnapshotInfo> {
    return snapshotSandbox(this.#ctx, id, opts);
  }

  async timeline(id: string): Promise<SnapshotInfo[]> {
    await this.#ctx.record(id);
    return (await this.#d.store.listSnapshots(id)).map(toSnapshotInfo);
  }

  async getSnapshot(snapId: string): Promise<SnapshotInfo> {
    return toSnapshotInfo(await this.#ctx.snapshotRecord(snapId));
  }

  /**
   * Pause: snapshot, then stop (or with `memory: false`, stop and keep the files). The sandbox uses no CPU until
   * resumed; its frozen processes are kept for the hot window (FORKD_HOT_PAUSE_S) so a resume soon after is a thaw.
   */
  async pause(id: string, opts: PauseOptions = {}): Promise<SandboxInfo> {
    return this.#ctx.locks.exclusive(id, () => this.#ctx.locks.away(id, () => pauseSandbox(this.#ctx, id, opts, true)));
  }

  /** A pause forkd decided on (idle, lifetime over): its memory is given back at once. */
  async hibernate(id: string, opts: PauseOptions = {}): Promise<SandboxInfo> {
    return this.#ctx.locks.exclusive(id, () => this.#ctx.locks.away(id, () => pauseSandbox(this.#ctx, id, opts, false)));
  }

  /**
   * Reconciler: a running sandbox whose cgroup has no task left (its init
   * was killed, by the OOM killer or from outside) is confirmed dead,
   * marked lost and brought back. Returns whether it was found dead. The
   * task count filters the periodic looks without a process per sandbox;
   * an end the runtime `announced` is confirmed with it at once, since a
   * killed init stays counted until it is reaped (here up to ~2 s, by a
   * PID 1 that is not systemd).
   */
  async reviveIfDead(id: string, announced = false): Promise<boolean> {
    const u = announced ? undefined : await this.#d.runtime.usage(await this.#ctx.instances.key(id)).catch(() => undefined);
    if (u && u.pids > 0) return false;
    return this.#ctx.locks.exclusive(id, async () => {
      const r = await this.#d.store.getSandbox(id);
      return r?.state === 'running' ? this.#ctx.recovery.noticeDeath(r) : false;
    });
  }

  /** Back to running: restored from the pause's snapshot, or started cold from its files (a filesystem-only pause, or `memory: false`). */
  async resume(id: string, opts: ResumeOptions = {}): Promise<SandboxInfo> {
    return this.#ctx.locks.exclusive(id, () => this.#ctx.locks.away(id, () => resumeSandbox(this.#ctx, id, opts)));
  }

  /** Rewind in place to any snapshot of the sandbox's timeline (see rewind.ts). */
  async rewind(id: string, snapId: string): Promise<SandboxInfo> {
    return this.#ctx.locks.exclusive(id, () => this.#ctx.locks.away(id, () => rewindSandbox(this.#ctx, id, snapId)));
  }

  /** Fork: new sandboxes from a snapshot, or live from a running sandbox (see fork.ts). */
  fork(source: string, count = 1, claim?: ClaimSandbox, opts: ForkOptions = {}): Promise<SandboxInfo[]> {
    return forkSandboxes(this.#ctx, source, count, claim, opts);
  }

  /** The fork tree below a sandbox: its snapshots and the sandboxes forked from them, recursively. */
  async tree(id: string): Promise<ForkTree> {
    return forkTree(this.#ctx, id);
  }

  /** A snapshot into the blob store (see export-snapshot.ts). */
  exportSnapshot(snapId: string): Promise<SnapshotExport> {
    return exportSnapshot(this.#ctx, this.#blobTransfer(), snapId);
  }

  /** A snapshot (with asSandbox: its sandbox, paused) from the blob store (see import-snapshot.ts). */
  importSnapshot(manifest: string, opts: ImportSnapshotOptions = {}): Promise<SnapshotInfo> {
    return importSnapshot(this.#ctx, this.#blobTransfer(), manifest, opts);
  }

  /** A whole template into the blob store (see export-template.ts). */
  exportTemplate(name: string): Promise<TemplateExport> {
    return exportTemplate(this.#ctx, this.#blobTransfer(), name);
  }

  /** A template from the blob store, usable as if built here (see import-template.ts). */
  importTemplate(manifest: string): Promise<TemplateInfo> {
    return importTemplate(this.#ctx, this.#blobTransfer(), manifest, this.#templateImports);
  }

  #blobTransfer(): BlobTransfer {
    if (!this.#transfer) throw new ForkdError('FAILED_PRECONDITION', 'this node has no blob store (FORKD_BLOB_STORE)');
    return this.#transfer;
  }

  /** Pinned snapshots are never thinned by the timeline policy (named ones start pinned). */
  async pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo> {
    return pinSnapshot(this.#ctx, snapId, pinned);
  }

  async deleteSnapshot(snapId: string): Promise<void> {
    return deleteSnapshot(this.#ctx, snapId);
  }

  /** Activity bookkeeping and what the policy above reads (see Reconciler). */
  markActive(id: string, at = Date.now()): void {
    this.#activity.set(id, at);
    for (const l of this.#activityListeners) l(id);
  }

  /** Told of every markActive (the policy brings an overdue snapshot forward, see PolicyScheduler). Returns the unsubscribe. */
  onActive(listener: (id: string) => void): () => void {
    this.#activityListeners.add(listener);
    return () => this.#activityListeners.delete(listener);
  }

  /** The runtime's notice that an instance's processes are all gone (see Runtime.watchExit). */
  watchExit(key: string, onExit: () => void): ExitWatch {
    return this.#d.runtime.watchExit(key, onExit);
  }

  lastActive(id: string): number | undefined {
    return this.#activity.get(id);
  }

  async openConnections(id: string): Promise<number> {
    return this.#ctx.guests.openConnections(await this.#ctx.instances.key(id));
  }

  records(): Promise<SandboxRecord[]> {
    return this.#d.store.listSandboxes();
  }

  recordOf(id: string): Promise<SandboxRecord | undefined> {
    return this.#d.store.getSandbox(id);
  }

  snapshotRecords(id: string): Promise<SnapshotRecord[]> {
    return this.#d.store.listSnapshots(id);
  }

  /** Sets the sandbox's lifetime to end `seconds` from now (0: no lifetime). Returns the updated sandbox. */
  async setTimeout(id: string, seconds: number): Promise<SandboxInfo> {
    return setLifetime(this.#ctx, id, seconds);
  }

  /** Replaces the sandbox's network mode and rules (see network-rules.ts). Returns the updated sandbox. */
  async setNetwork(id: string, rules: SetNetworkRequest): Promise<SandboxInfo> {
    return setNetwork(this.#ctx, id, rules);
  }

  /**
   * Every running sandbox's network rules made again (forkd's nftables table
   * was removed by someone else: table-watch.ts), each under its lock so a
   * rewind or a rule change in flight is not raced; failures are logged.
   */
  async reapplyNetworks(): Promise<void> {
    return reapplyNetworks(this.#ctx);
  }

  /** The lifetime ran out: pause (the lifetime is spent until a resume) or delete. */
  async timeOut(id: string): Promise<void> {
    return timeOut(this.#ctx, id, (x, opts) => this.hibernate(x, opts));
  }

  /** A rolling-timeline snapshot (unnamed, thinnable), if the sandbox is still running. */
  async policySnapshot(id: string): Promise<void> {
    return policySnapshot(this.#ctx, id, this.#d.onEvent);
  }

  async deleteTemplate(name: string): Promise<void> {
    if (name === 'base') throw new ForkdError('FAILED_PRECONDITION', 'the base template cannot be deleted');
    if (!(await this.#d.templates.get(name))) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
    this.#ctx.pool.forget(name);
    await this.#d.templates.remove(name);
  }
}
