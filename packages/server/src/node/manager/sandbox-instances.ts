import { ForkdError, Limits, LOOPBACK_ONLY, type NetworkRules } from '@forkd/protocol';
import type { Network } from '../network/network.js';
import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, SnapshotRecord, Store } from '../../store/store.js';
import type { SandboxSummary } from '../../store/observed-store.js';
import type { IdMap, Runtime, RuntimeSpec } from '../runtime/runtime.js';
import type { SandboxRoot } from '../runtime/sandbox-root.js';
import type { Storage } from '../storage/storage.js';
import type { SnapshotFiles } from '../storage/snapshot-files.js';
import type { TemplateRegistry } from '../templates/template-registry.js';
import type { GuestTransport } from '../runtime/guest-transport.js';
import { poolLayout } from '../storage/pool-layout.js';
import { ID_RANGE_SIZE, pickIdRange } from './id-ranges.js';
import type { SandboxDisk } from './sandbox-disk.js';

const ms = (x: number) => Math.round(x * 10) / 10;

export interface InstancesDeps {
  store: Store;
  /** Every sandbox's id range, among other things (see ManagerDeps.summaries). */
  summaries(): Promise<readonly SandboxSummary[]>;
  storage: Storage;
  runtime: Runtime;
  templates: TemplateRegistry;
  guests: GuestTransport;
  files: SnapshotFiles;
  space: SandboxDisk;
  logger: Logger;
  network: Network;
  /** New sandboxes get a user namespace (an id range of their own; see id-ranges.ts). */
  userns: boolean;
  /** See frozenAt (FORKD_KEEP_PAUSED_ROOT). */
  keepPausedRoot: boolean;
}

/**
 * The instances under sandboxes (by runtime key: the sandbox id, or after a
 * rewind `<id>.<hex>`): their root volume, container and agent, made from a
 * template, a snapshot or their own files, and released.
 */
export class SandboxInstances {
  readonly #d: InstancesDeps;
  /** Id ranges of warm-pool members (no record yet) and of starts whose record does not have theirs yet. */
  readonly pooledIdmap = new Map<string, IdMap | undefined>();
  readonly #reservedIds = new Set<number>();
  /** Instances whose processes were frozen at a pause's snapshot and never ran after it (key → snapshot id); see frozenAt. */
  readonly #frozenRoots = new Map<string, string>();

  constructor(deps: InstancesDeps) {
    this.#d = deps;
  }

  /** Runtime key of a sandbox's current instance (warm-pool sandboxes have no record yet: their id). */
  async key(id: string): Promise<string> {
    return (await this.#d.store.getSandbox(id))?.instance ?? id;
  }

  volumeOf(key: string): string {
    return poolLayout.sandbox(key);
  }

  /** Host path of an instance's root volume (disk quotas, test helpers). */
  rootfsOf(key: string): string {
    return this.#d.storage.path(this.volumeOf(key));
  }

  /**
   * Host path of the template a sandbox was made from (for an imported one, the
   * template received with it: SandboxRecord.base); undefined once that template
   * was deleted (even if the name was reused).
   */
  async templateRoot(r: Pick<SandboxRecord, 'template' | 'templateId' | 'base'>): Promise<string | undefined> {
    const volume = r.base ?? (await this.#d.templates.volumeOf(r.template, r.templateId));
    return volume === undefined ? undefined : this.#d.storage.path(volume);
  }

  /** An instance's root as its runtime takes it. */
  #root(key: string): SandboxRoot {
    return this.#d.storage.root(this.volumeOf(key), this.#d.runtime.rootKind);
  }

  spec(r: SandboxRecord, key: string): RuntimeSpec {
    return { root: this.#root(key), hostname: r.id, limits: r.limits, env: {}, idmap: r.idmap === undefined ? undefined : { hostId: r.idmap, size: ID_RANGE_SIZE }, network: r.network };
  }

  /**
   * A fresh id range for a sandbox started from files (a warm template's or
   * a snapshot's restore gets the range of its images instead). None is
   * shared with a sandbox, fork or warm template that exists.
   */
  async #newIdmap(): Promise<IdMap | undefined> {
    if (!this.#d.userns) return undefined;
    const records = await this.#d.summaries();
    const templates = await this.#d.templates.list();
    const warm = await Promise.all(templates.map((t) => this.#d.templates.get(t.name)));
    // From here to the reservation nothing is awaited: two starts never pick the same range.
    const used = new Set<number>(this.#reservedIds);
    for (const r of records) if (r.idmap !== undefined) used.add(r.idmap);
    for (const t of warm) if (t?.idmap !== undefined) used.add(t.idmap);
    for (const m of this.pooledIdmap.values()) if (m) used.add(m.hostId);
    const hostId = pickIdRange(used);
    this.#reservedIds.add(hostId);
    return { hostId, size: ID_RANGE_SIZE };
  }

  async recordIdmap(r: SandboxRecord, idmap: IdMap | undefined): Promise<void> {
    if (idmap) this.#reservedIds.delete(idmap.hostId);
    if (r.idmap === idmap?.hostId) return;
    await this.#d.store.setIdmap(r.id, idmap?.hostId);
    r.idmap = idmap?.hostId;
  }

  /** Root filesystem, container and a guest that answers: a sandbox ready for work. */
  async start(id: string, template: string, limits: Limits, network?: NetworkRules): Promise<IdMap | undefined> {
    const t0 = performance.now();
    const key = await this.key(id);
    const rootfs = await this.#d.storage.prepare(this.volumeOf(key), this.#d.templates.volume(template));
    await this.#d.space.limitForStart(rootfs, this.#d.storage.path(this.#d.templates.volume(template)), limits.diskMb);
    const warm = (await this.#d.templates.get(template))?.images;
    // A warm template's memory maps the agent binary it was built with: keep that one.
    // A cold start also empties the root's /dev, a warm one keeps the template's (see prepareRoot).
    await this.#d.guests.prepareRoot(id, { install: !warm });
    const t1 = performance.now();
    const spec = { root: this.#root(key), hostname: id, limits, env: {}, idmap: warm ? undefined : await this.#newIdmap(), network };
    const st = warm ? await this.#d.runtime.restore(id, spec, { imagesDir: this.#d.templates.imagesDir(template) }) : await this.#d.runtime.start(id, spec);
    const t2 = performance.now();
    await this.waitReady(id);
    this.#d.logger.debug('sandbox started', { sandbox: id, rootfsMs: ms(t1 - t0), runtimeMs: ms(t2 - t1), readyMs: ms(performance.now() - t2) });
    return st.idmap;
  }

  /**
   * A warm sandbox started with default limits: apply the requested ones. A
   * member that is gone or does not answer (destroyed behind the pool's back,
   * its agent killed) is replaced by a cold start under the same id: the
   * caller asked for a sandbox, not for that one.
   */
  async adopt(rec: SandboxRecord): Promise<IdMap | undefined> {
    const key = await this.key(rec.id);
    const idmap = this.pooledIdmap.get(rec.id);
    this.pooledIdmap.delete(rec.id);
    try {
      await this.#d.guests.at(key).info();
      // Pool members were started with the default quota.
      if (this.#d.space.diskMbOf(rec.limits) !== this.#d.space.defaultDiskMb) await this.#d.space.apply(this.rootfsOf(key), await this.templateRoot(rec), rec.limits.diskMb);
      const defaults = Limits.parse({});
      if (rec.limits.memoryMb !== defaults.memoryMb || rec.limits.cpus !== defaults.cpus || rec.limits.pids !== defaults.pids) {
        await this.#d.runtime.update(key, rec.limits);
      }
      // Pool members start with loopback only.
      if (rec.network && rec.network.mode !== 'none') await this.#d.network.setRules(key, rec.network);
      return idmap;
    } catch (err) {
      this.#d.logger.warn('warm sandbox unusable, starting one cold', { sandbox: rec.id, error: (err as Error).message });
      await this.release(rec.id);
      return this.start(rec.id, rec.template, rec.limits, rec.network);
    }
  }

  /** Recovery without a usable snapshot: the agent started afresh on the instance's own root volume (its files, no memory). */
  async startCold(key: string, r: SandboxRecord): Promise<void> {
    this.#frozenRoots.delete(key);
    if (!(await this.#d.storage.exists(this.volumeOf(key)))) throw new ForkdError('FAILED_PRECONDITION', `sandbox ${r.id} has neither a usable snapshot nor its files`);
    const rootfs = this.rootfsOf(key);
    // Also gives a root made before quotas its limit.
    await this.#d.space.limitForStart(rootfs, await this.templateRoot(r), r.limits.diskMb);
    // The agent of today: nothing in memory maps an older one.
    await this.#d.guests.prepareRoot(key, { install: true });
    await this.#d.runtime.start(key, this.spec(r, key));
  }

  /**
   * Restores a sandbox's processes from a snapshot into the instance `key`
   * (see waitReady for when it answers). Its root volume is first replaced
   * by a writable copy of the snapshot's root, so memory and files match
   * whatever happened to the volume before (an interrupted pause included).
   */
  async restoreInto(key: string, r: SandboxRecord, snap: SnapshotRecord): Promise<void> {
    await this.#d.files.checkRestorable(snap.id);
    const release = await this.#d.guests.at(key).quiesce();
    // Made while the runtime readies the rest (its bundle, cgroups, network: ~5 ms); awaited on every path.
    const rootReady = this.#rootFor(key, r, snap);
    try {
      const st = await this.#d.runtime.restore(key, this.spec(r, key), { imagesDir: this.#d.files.memoryDir(snap.id), rootReady });
      // The images decide (a fork's are its parent's): the record follows.
      await this.recordIdmap(r, st.idmap);
    } catch (err) {
      await rootReady.catch(() => {});
      throw err;
    } finally {
      release();
    }
  }

  /** The root volume of `key` for a restore of `snap`: its files, its start headroom, the agent's mount points. */
  async #rootFor(key: string, r: SandboxRecord, snap: SnapshotRecord): Promise<void> {
    const volume = this.volumeOf(key);
    const frozenAt = this.#frozenRoots.get(key);
    this.#frozenRoots.delete(key);
    // A hibernated sandbox resumed from its pause: its root is that snapshot's files (~10 ms less than a new copy).
    const kept = frozenAt === snap.id && (await this.#d.storage.unchangedSince(volume, this.#d.files.rootfsKey(snap.id)));
    // Simple quotas: the new root joins the group of the root it replaces (this one, or the instance a rewind leaves).
    const lineage = kept ? undefined : await this.#d.space.lineage([this.rootfsOf(key), this.rootfsOf(r.instance ?? r.id)]);
    if (!kept) {
      await this.#d.storage.remove(volume);
      await this.#d.storage.prepare(volume, this.#d.files.rootfsKey(snap.id));
    }
    await Promise.all([
      // Room for forkd and CRIU to write, even into a root that was at its quota.
      this.templateRoot(r).then((template) => this.#d.space.limitForStart(this.#d.storage.path(volume), template, r.limits.diskMb, lineage)),
      this.#d.guests.prepareRoot(key, { install: false }),
    ]);
  }

  /** A running instance's network, as `rules` say from the next connection on. */
  async setNetwork(key: string, rules: NetworkRules): Promise<void> {
    await this.#d.network.setRules(key, rules);
  }

  /** A running instance whose network namespace is no longer held (see Network.held) has it adopted again from its init (`pid`). */
  async reholdNetwork(key: string, pid: number, rules: NetworkRules | undefined): Promise<boolean> {
    if (await this.#d.network.held(key)) return false;
    await this.#d.network.adopt(key, pid, rules ?? LOOPBACK_ONLY);
    return true;
  }

  /** The agent answers (see GuestTransport.waitAgent); the root's exact quota is set from then on. */
  async waitReady(key: string): Promise<void> {
    await this.#d.guests.waitAgent(key, async () => (await this.#d.runtime.state(key)).status);
    this.#d.space.settle(this.rootfsOf(key));
  }

  /** A thawed instance's agent answers (sealed at its first start: no new seal) and is not dumpable again. */
  async waitAlive(key: string): Promise<void> {
    const guest = this.#d.guests.at(key);
    await guest.info();
    await guest.setDumpable(false).catch(() => {});
  }

  /** A sandbox's current instance. */
  async release(id: string): Promise<void> {
    await this.releaseKey(await this.key(id));
  }

  /**
   * The processes of `key` were frozen when `snapshot` was taken (a pause)
   * and will not run again: they are killed frozen, or thawed only after
   * thawing() says so. Nothing writes the root after the snapshot, so a
   * restore of that snapshot may keep the root rather than copy the
   * snapshot's, if Storage.unchangedSince also finds nothing committed to it
   * since. Memory only: after a restart of the daemon every restore copies.
   */
  frozenAt(key: string, snapshot: string): void {
    if (this.#d.keepPausedRoot) this.#frozenRoots.set(key, snapshot);
  }

  /** The processes of `key` run again from now on (see frozenAt). */
  thawing(key: string): void {
    this.#frozenRoots.delete(key);
  }

  /** Processes, namespaces, cgroup and root volume of one instance. */
  async releaseKey(key: string): Promise<void> {
    this.#frozenRoots.delete(key);
    this.#d.guests.drop(key);
    await this.#d.runtime.destroy(key);
    this.#d.space.forget(this.rootfsOf(key));
    await this.#d.storage.remove(this.volumeOf(key));
  }

  /** The dead processes' leftovers of an instance (runc state, cgroup, namespace, guest link); its root volume stays. */
  async dropProcesses(key: string): Promise<void> {
    this.#d.guests.drop(key);
    await this.#d.runtime.destroy(key);
  }
}
