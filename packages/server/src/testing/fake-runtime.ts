import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ForkdError, type Limits } from '@forkd/protocol';
import type { GuestTransport } from '../node/runtime/guest-transport.js';
import { FakeGuestTransport } from './fake-guest-transport.js';
import { KeyedCallbacks } from '../shared/keyed-callbacks.js';
import type { RuntimeNetwork } from '../node/network/network.js';
import type { CheckpointImages, CheckpointOptions, CheckpointStats, ExitWatch, IdMap, ResourceUsage, RestoreOptions, Runtime, RuntimeSpec, RuntimeState, RuntimeStatus } from '../node/runtime/runtime.js';

export type RuntimeOp = 'start' | 'restore' | 'checkpoint' | 'destroy' | 'state' | 'usage' | 'thaw' | 'freeze' | 'update' | 'list' | 'settleMemory';

export interface RuntimeCall {
  op: RuntimeOp;
  id?: string | undefined;
}

/** The fake's whole image set: one file, holding the range it was dumped with. */
const CHECKPOINT_FILE = 'fake-checkpoint.json';

/** The fake's own image layout (never CRIU's: the code that stores images must ask, not know). */
export const fakeImages: CheckpointImages = {
  complete: (dir) => access(join(dir, CHECKPOINT_FILE)).then(() => true, () => false),
  isPages: (name) => name.startsWith('fake-pages'),
  idmap: async (dir) => (await readCheckpoint(dir)).idmap,
};

async function readCheckpoint(dir: string): Promise<{ idmap: IdMap | undefined; memory: string }> {
  const text = await readFile(join(dir, CHECKPOINT_FILE), 'utf8').catch(() => undefined);
  const idmap = text === undefined ? undefined : ((JSON.parse(text) as { idmap?: IdMap }).idmap ?? undefined);
  return { idmap, memory: await readFile(join(dir, 'fake-pages-1'), 'utf8').catch(() => '') };
}

interface Instance {
  status: RuntimeStatus;
  spec: RuntimeSpec;
  /** Host pid of its init (made up). */
  pid: number;
  /** What its "processes" hold in memory: picked at a start, kept by a checkpoint, brought back by a restore. */
  memory: string;
  pids: number;
  oomKills: number;
}

/**
 * A Runtime in memory, for unit tests of the manager without root: start
 * and restore make an instance that "runs", checkpoint writes a small fake
 * image set (its own layout, fakeImages, with the range it was dumped with,
 * which a restore takes as RuncRuntime's does) and, without leaveRunning,
 * leaves it paused. With a network it prepares, adopts and releases
 * namespaces as RuncRuntime does. Agrees with RuncRuntime on everything
 * runtime-conformance.ts checks. Every call is recorded; an operation can be
 * told to fail or to block until released.
 */
export class FakeRuntime implements Runtime {
  readonly rootKind = 'directory';
  readonly images = fakeImages;
  readonly calls: RuntimeCall[] = [];
  readonly instances = new Map<string, Instance>();
  readonly #failures = new Map<RuntimeOp, { err: Error; times: number }>();
  readonly #blocks = new Map<RuntimeOp, { reached: () => void; until: Promise<void> }>();
  readonly #network: RuntimeNetwork | undefined;
  #pids = 1000;

  constructor(opts: { network?: RuntimeNetwork } = {}) {
    this.#network = opts.network;
  }

  /** The next calls of `op` reject with `err` (until `succeed(op)`, or `times` of them). */
  fail(op: RuntimeOp, err: Error = new ForkdError('INTERNAL', `fake ${op} failure`), times = Infinity): void {
    this.#failures.set(op, { err, times });
  }

  succeed(op: RuntimeOp): void {
    this.#failures.delete(op);
  }

  /**
   * The next call of `op` waits until `release` is called; `reached`
   * resolves when it is waiting (so a test can act while it is blocked).
   */
  block(op: RuntimeOp): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedP = new Promise<void>((r) => (reached = r));
    const until = new Promise<void>((r) => (release = r));
    this.#blocks.set(op, { reached, until });
    return { reached: reachedP, release };
  }

  /** The ids on which `op` was called, in order. */
  callsOf(op: RuntimeOp): Array<string | undefined> {
    return this.calls.filter((c) => c.op === op).map((c) => c.id);
  }

  readonly #exitWatches = new KeyedCallbacks();

  /** As if its init died (OOM killer, kill from outside): announced to its exit watches. */
  kill(id: string): void {
    const i = this.instances.get(id);
    if (i) {
      i.status = 'stopped';
      i.pids = 0;
    }
    for (const w of this.#exitWatches.take(id)) w();
  }

  watchExit(id: string, onExit: () => void): ExitWatch {
    return { stop: this.#exitWatches.add(id, onExit), everyExit: true };
  }

  /** Exit watches in place (tests of who watches what). */
  exitWatches(id: string): number {
    return this.#exitWatches.count(id);
  }

  /** An instance the manager did not make (an orphan a crash left). */
  plant(id: string, status: RuntimeStatus = 'running'): void {
    this.instances.set(id, { status, spec: { root: { kind: 'directory', path: '' }, hostname: id, limits: { memoryMb: 512, cpus: 1, pids: 1024 }, env: {} }, pid: ++this.#pids, memory: '', pids: 1, oomKills: 0 });
  }

  async #enter(op: RuntimeOp, id?: string): Promise<void> {
    this.calls.push({ op, id });
    const b = this.#blocks.get(op);
    if (b) {
      this.#blocks.delete(op);
      b.reached();
      await b.until;
    }
    const f = this.#failures.get(op);
    if (!f) return;
    if (--f.times <= 0) this.#failures.delete(op);
    throw f.err;
  }

  /** Nothing to ready on the host. */
  async prepareHost(): Promise<void> {}

  /** A guest side without an agent (see FakeGuestTransport); the test kit gives the manager its own to inspect. */
  guests(): GuestTransport {
    return new FakeGuestTransport();
  }

  async start(id: string, spec: RuntimeSpec): Promise<RuntimeState> {
    await this.#enter('start', id);
    if (this.instances.get(id)?.status === 'running') throw new ForkdError('ALREADY_EXISTS', `fake instance ${id} exists`);
    return this.#run(id, spec, spec.idmap, randomBytes(8).toString('hex'));
  }

  async restore(id: string, requested: RuntimeSpec, opts: RestoreOptions): Promise<RuntimeState> {
    await this.#enter('restore', id);
    await opts.rootReady;
    if (!(await fakeImages.complete(opts.imagesDir))) throw new ForkdError('INTERNAL', `fake restore failed: no checkpoint in ${opts.imagesDir}`);
    // As CRIU: the range the images were dumped with, whatever the spec says.
    const { idmap, memory } = await readCheckpoint(opts.imagesDir);
    return this.#run(id, { ...requested, idmap }, idmap, memory);
  }

  /** A running instance, in its network namespace: made for it, or (with a user namespace) made with it and adopted. */
  async #run(id: string, spec: RuntimeSpec, idmap: IdMap | undefined, memory: string): Promise<RuntimeState> {
    const pid = ++this.#pids;
    const rules = spec.network ?? { mode: 'none' as const, allowOut: [], denyOut: [] };
    if (this.#network) await (idmap ? this.#network.adopt(id, pid, rules) : this.#network.prepare(id, rules));
    this.instances.set(id, { status: 'running', spec, pid, memory, pids: 1, oomKills: 0 });
    return { status: 'running', pid, idmap };
  }

  /** A fake restore has all its memory at once. */
  async settleMemory(id: string): Promise<void> {
    await this.#enter('settleMemory', id);
  }

  async checkpoint(id: string, opts: CheckpointOptions): Promise<CheckpointStats> {
    await this.#enter('checkpoint', id);
    const i = this.instances.get(id);
    // A tree frozen beforehand (freeze) is dumped as it is, and stays frozen.
    if (!i || (i.status !== 'running' && i.status !== 'paused')) throw new ForkdError('INTERNAL', `fake dump failed: instance ${id} is not running`);
    await mkdir(opts.imagesDir, { recursive: true, mode: 0o700 });
    await mkdir(opts.workDir, { recursive: true, mode: 0o700 });
    await writeFile(join(opts.imagesDir, 'fake-pages-1'), i.memory);
    await writeFile(join(opts.imagesDir, CHECKPOINT_FILE), JSON.stringify({ idmap: i.spec.idmap }));
    if (!opts.leaveRunning) i.status = 'paused';
    return { frozenMs: 1, dumpMs: 1 };
  }

  async destroy(id: string): Promise<void> {
    await this.#enter('destroy', id);
    this.instances.delete(id);
    await this.#network?.release(id);
  }

  async state(id: string): Promise<RuntimeState> {
    await this.#enter('state', id);
    const i = this.instances.get(id);
    return i ? { status: i.status, pid: i.pid } : { status: 'missing', pid: 0 };
  }

  async update(id: string, limits: Limits): Promise<void> {
    await this.#enter('update', id);
    const i = this.instances.get(id);
    if (!i) throw new ForkdError('INTERNAL', `fake update failed: no instance ${id}`);
    i.spec = { ...i.spec, limits };
  }

  async thaw(id: string): Promise<void> {
    await this.#enter('thaw', id);
    const i = this.instances.get(id);
    if (!i) throw new ForkdError('NOT_FOUND', `fake instance ${id} not found`);
    if (i.status === 'paused') i.status = 'running';
  }

  async freeze(id: string): Promise<void> {
    await this.#enter('freeze', id);
    const i = this.instances.get(id);
    if (!i) throw new ForkdError('NOT_FOUND', `fake instance ${id} not found`);
    i.status = 'paused';
  }

  async usage(id: string): Promise<ResourceUsage> {
    await this.#enter('usage', id);
    const i = this.instances.get(id);
    // As a cgroup that is not there: nothing used, no limit.
    if (!i) return { memoryBytes: 0, memoryLimitBytes: 0, cpuNanos: 0, pids: 0, oomKills: 0, pidsLimitHits: 0 };
    return { memoryBytes: 64 * 2 ** 20, memoryLimitBytes: i.spec.limits.memoryMb * 2 ** 20, cpuNanos: 0, pids: i.pids, oomKills: i.oomKills, pidsLimitHits: 0 };
  }

  async list(): Promise<string[]> {
    await this.#enter('list');
    return [...new Set([...this.instances.keys(), ...((await this.#network?.list()) ?? [])])];
  }
}
