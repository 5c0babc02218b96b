import { chmod, copyFile, lstat, mkdir, rm } from 'node:fs/promises';
import { constants as osConstants } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  canTransition,
  CreateSandboxRequest,
  ForkdError,
  Limits,
  newSandboxId,
  type SandboxInfo,
  type SandboxState,
  type TemplateInfo,
} from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, Store } from '../../store/store.js';
import { GuestClient, type GuestProcess, type OutputHandlers, type ProcessExit, type SpawnOptions } from '../guest/guest-client.js';
import type { ResourceUsage, Runtime } from '../runtime/runtime.js';
import type { Storage } from '../storage/storage.js';
import type { TemplateRegistry } from '../templates/template-registry.js';
import { WarmPool } from './warm-pool.js';

export interface ManagerDeps {
  store: Store;
  storage: Storage;
  runtime: Runtime;
  templates: TemplateRegistry;
  guestBinary: string;
  logger: Logger;
  /** Sandboxes per template kept started ahead of demand (0 disables). */
  warmPoolSize?: number;
}

export interface ExecExit extends ProcessExit {
  oomKilled: boolean;
}

/** Where the guest agent lives inside every sandbox root. */
export const GUEST_DIR = '.forkd';
const GUEST_INIT = `/${GUEST_DIR}/init`;
const READY_TIMEOUT_MS = 15_000;

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
  };
}

/**
 * The node's sandbox lifecycle: composes Storage, Runtime and the guest link
 * behind one API, persists every state change before acting on it, and on
 * start reconciles the store with what actually runs.
 */
export class SandboxManager {
  readonly #d: ManagerDeps;
  readonly #guests = new Map<string, GuestClient>();
  readonly #pool: WarmPool;

  constructor(deps: ManagerDeps) {
    this.#d = deps;
    this.#pool = new WarmPool(
      {
        start: async (template) => {
          const id = newSandboxId();
          await this.#start(id, template, Limits.parse({}));
          return id;
        },
        destroy: (id) => this.#release(id),
        logger: deps.logger,
      },
      deps.warmPoolSize ?? 0,
      ['base'],
    );
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
  }

  volume(id: string): string {
    return `sandboxes/${id}`;
  }

  rootfs(id: string): string {
    return this.#d.storage.path(this.volume(id));
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

  async create(input: CreateSandboxRequest): Promise<SandboxInfo> {
    const parsed = CreateSandboxRequest.safeParse(input);
    if (!parsed.success) throw new ForkdError('INVALID_ARGUMENT', parsed.error.issues.map((i) => `${i.path.join('.') || 'body'}: ${i.message}`).join('; '));
    const req = parsed.data;
    if (!(await this.#d.templates.has(req.template))) throw new ForkdError('NOT_FOUND', `template ${req.template} not found`);
    const limits = Limits.parse({ memoryMb: req.memoryMb, cpus: req.cpus, pids: req.pids });
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
    };
    this.#d.store.insertSandbox(rec);
    try {
      if (warm) {
        await this.#adopt(rec);
      } else {
        await this.#start(rec.id, rec.template, limits);
      }
      this.#transition(rec, 'running');
      this.#d.logger.info('sandbox created', { sandbox: rec.id, template: rec.template, warm: !!warm });
      return toInfo(rec);
    } catch (err) {
      this.#d.logger.warn('sandbox create failed', { sandbox: rec.id, error: (err as Error).message });
      await this.#release(rec.id).catch(() => {});
      this.#d.store.deleteSandbox(rec.id);
      throw err;
    }
  }

  /** A warm sandbox started with default limits: apply the requested ones. */
  async #adopt(rec: SandboxRecord): Promise<void> {
    const defaults = Limits.parse({});
    if (rec.limits.memoryMb !== defaults.memoryMb || rec.limits.cpus !== defaults.cpus || rec.limits.pids !== defaults.pids) {
      await this.#d.runtime.update(rec.id, rec.limits);
    }
  }

  /** Root filesystem, container and a guest that answers: a sandbox ready for work. */
  async #start(id: string, template: string, limits: Limits): Promise<void> {
    const t0 = performance.now();
    const rootfs = await this.#d.storage.prepare(this.volume(id), this.#d.templates.volume(template));
    await this.#installGuest(rootfs);
    const t1 = performance.now();
    await this.#d.runtime.start(id, { rootfs, hostname: id, limits, init: GUEST_INIT, env: {} });
    const t2 = performance.now();
    await this.#waitReady(id);
    this.#d.logger.debug('sandbox started', { sandbox: id, rootfsMs: ms(t1 - t0), runtimeMs: ms(t2 - t1), readyMs: ms(performance.now() - t2) });
  }

  async #installGuest(rootfs: string): Promise<void> {
    const dir = join(rootfs, GUEST_DIR);
    await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { mode: 0o700 });
    await copyFile(this.#d.guestBinary, join(dir, 'init'));
    await chmod(join(dir, 'init'), 0o755);
  }

  async #waitReady(id: string): Promise<void> {
    const guest = this.guestClient(id);
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let delay = 1;
    for (;;) {
      try {
        await guest.info();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new ForkdError('TIMEOUT', `guest agent of ${id} did not become ready`, undefined, { cause: err });
        const st = await this.#d.runtime.state(id);
        if (st.status === 'stopped' || st.status === 'missing') throw new ForkdError('INTERNAL', `sandbox ${id} exited during start`);
        await sleep(delay);
        delay = Math.min(delay * 2, 4);
      }
    }
  }

  /** The guest link of a sandbox (no liveness check; see `guest`). */
  guestClient(id: string): GuestClient {
    let g = this.#guests.get(id);
    if (!g) {
      g = new GuestClient(join(this.rootfs(id), GUEST_DIR, 'agent.sock'));
      this.#guests.set(id, g);
    }
    return g;
  }

  /** The guest link of a running sandbox; every exec/file call goes through here. */
  guest(id: string): GuestClient {
    const r = this.#record(id);
    if (r.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${r.state}`);
    return this.guestClient(id);
  }

  /**
   * Starts a process and reports its exit with OOM attribution: the kernel
   * says only SIGKILL, the sandbox's cgroup says whether the OOM killer did it.
   */
  async spawn(id: string, opts: SpawnOptions, handlers: OutputHandlers = {}): Promise<{ process: GuestProcess; exit: Promise<ExecExit | null> }> {
    const guest = this.guest(id);
    const before = await this.#d.runtime.usage(id).catch(() => undefined);
    const process = await guest.spawn({ ...opts, env: { ...this.#record(id).env, ...opts.env } }, handlers);
    return { process, exit: this.#withOom(id, process, before) };
  }

  async attach(id: string, sel: { pid: number } | { tag: string }, handlers: OutputHandlers = {}): Promise<{ process: GuestProcess; exit: Promise<ExecExit | null> }> {
    const guest = this.guest(id);
    const before = await this.#d.runtime.usage(id).catch(() => undefined);
    const process = await guest.attach(sel, handlers);
    return { process, exit: this.#withOom(id, process, before) };
  }

  async #withOom(id: string, p: GuestProcess, before: ResourceUsage | undefined): Promise<ExecExit | null> {
    const exit = await p.done;
    if (!exit) return null;
    let oomKilled = false;
    if (exit.signal === osConstants.signals.SIGKILL && before) {
      const after = await this.#d.runtime.usage(id).catch(() => undefined);
      oomKilled = !!after && after.oomKills > before.oomKills;
    }
    return { ...exit, oomKilled };
  }

  templates(): TemplateInfo[] {
    return this.#d.templates.list();
  }

  usage(id: string): Promise<ResourceUsage> {
    this.guest(id);
    return this.#d.runtime.usage(id);
  }

  async delete(id: string): Promise<void> {
    const r = this.#record(id);
    if (r.state !== 'stopping') this.#transition(r, 'stopping');
    await this.#release(id);
    this.#d.store.deleteSandbox(id);
    this.#d.logger.info('sandbox deleted', { sandbox: id });
  }

  async #release(id: string): Promise<void> {
    this.#guests.delete(id);
    await this.#d.runtime.destroy(id);
    await this.#d.storage.remove(this.volume(id));
  }

  /**
   * Reconciles the store with reality after a (possibly unclean) restart:
   * finishes interrupted creates and deletes, marks sandboxes whose processes
   * are gone as failed (their files stay until deleted), and removes runtime
   * containers and volumes nobody owns.
   */
  async recover(): Promise<void> {
    await this.#d.templates.sweep();
    const known = new Set<string>();
    for (const r of this.#d.store.listSandboxes()) {
      known.add(r.id);
      if (r.state === 'creating' || r.state === 'stopping') {
        await this.#release(r.id).catch((err) => this.#d.logger.warn('cleanup failed', { sandbox: r.id, error: String(err) }));
        this.#d.store.deleteSandbox(r.id);
        continue;
      }
      if (r.state === 'running') {
        const st = await this.#d.runtime.state(r.id);
        let ok = st.status === 'running';
        if (ok) ok = await this.guestClient(r.id).info().then(() => true, () => false);
        if (!ok) {
          this.#transition(r, 'failed', 'the sandbox processes were lost (host reboot or crash); its files are kept until it is deleted');
          this.#d.logger.warn('sandbox lost', { sandbox: r.id, runtime: st.status });
        }
      }
    }
    const pooled = this.#pool.held();
    for (const id of await this.#d.runtime.list()) {
      if (!known.has(id) && !pooled.has(id)) await this.#d.runtime.destroy(id).catch(() => {});
    }
    for (const key of await this.#d.storage.list('sandboxes')) {
      const id = key.split('/')[1] ?? '';
      if (!known.has(id) && !pooled.has(id)) await this.#d.storage.remove(key).catch(() => {});
    }
  }

  /** Volume paths are host paths; exposed for tests and diagnostics only. */
  async hasRootfs(id: string): Promise<boolean> {
    return lstat(this.rootfs(id)).then(
      () => true,
      () => false,
    );
  }
}
