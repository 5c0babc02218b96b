import { ForkdError, type BuildTemplateRequest, type CreateSandboxRequest, type SandboxInfo, type SnapshotInfo, type TemplateInfo } from '@forkd/protocol';
import type { GuestClient } from '../../node/guest/guest-client.js';
import type { ForkTree } from '../../node/manager/sandbox-manager.js';
import type { ControlStore } from '../../store/control-store.js';
import { DEFAULT_TENANT } from '../auth/api-keys.js';
import type { SandboxService } from './sandbox-service.js';
import { newProxyToken } from './port-proxy.js';

/**
 * The SandboxService as one tenant sees it: only its own sandboxes, their
 * snapshots, and its own or the shared templates. Anything else answers
 * exactly like an id that does not exist, so ids never leak across tenants.
 * Ownership is the control plane's: nodes know nothing of tenants.
 */
export class TenantView implements SandboxService {
  readonly #svc: SandboxService;
  readonly #control: ControlStore;
  readonly #tenant: string;

  constructor(svc: SandboxService, control: ControlStore, tenant: string) {
    this.#svc = svc;
    this.#control = control;
    this.#tenant = tenant;
  }

  /** Sandboxes from before tenancy existed belong to the default tenant. */
  #owns(id: string): boolean {
    return (this.#control.owner('sandbox', id) ?? DEFAULT_TENANT) === this.#tenant;
  }

  #sandbox(id: string): string {
    if (!this.#owns(id)) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
    return id;
  }

  #snapshot(snapId: string): SnapshotInfo {
    const s = this.#svc.getSnapshot(snapId);
    if (!this.#owns(s.sandboxId)) throw new ForkdError('NOT_FOUND', `snapshot ${snapId} not found`);
    return s;
  }

  /** Templates nobody owns (the base ones) are shared. */
  #templateVisible(name: string): boolean {
    const o = this.#control.owner('template', name);
    return o === undefined || o === this.#tenant;
  }

  /** New sandboxes (forks too) get their owner and a fresh proxy token: nothing is inherited from a parent. */
  #adopt(sandboxes: SandboxInfo[]): SandboxInfo[] {
    for (const s of sandboxes) {
      this.#control.setOwner('sandbox', s.id, this.#tenant);
      this.#control.setToken(s.id, newProxyToken());
    }
    return sandboxes.map((s) => this.#shown(s));
  }

  /** What the owner sees: the sandbox and its proxy token (minted now for sandboxes older than tokens). */
  #shown(s: SandboxInfo): SandboxInfo {
    let token = this.#control.token(s.id);
    if (!token) {
      token = newProxyToken();
      this.#control.setToken(s.id, token);
    }
    return { ...s, proxyToken: token };
  }

  async create(req: CreateSandboxRequest): Promise<SandboxInfo> {
    const template = req.template ?? 'base';
    if (!this.#templateVisible(template)) throw new ForkdError('NOT_FOUND', `template ${template} not found`);
    return this.#adopt([await this.#svc.create(req)])[0]!;
  }

  get(id: string): SandboxInfo {
    return this.#shown(this.#svc.get(this.#sandbox(id)));
  }

  list(): SandboxInfo[] {
    const mine = this.#control.owned('sandbox', this.#tenant);
    return this.#svc
      .list()
      .filter((s) => mine.has(s.id) || (this.#tenant === DEFAULT_TENANT && this.#control.owner('sandbox', s.id) === undefined))
      .map((s) => this.#shown(s));
  }

  delete(id: string): Promise<void> {
    return this.#svc.delete(this.#sandbox(id));
  }

  guest(id: string): Promise<GuestClient> {
    return this.#svc.guest(this.#sandbox(id));
  }

  spawn(...[id, ...rest]: Parameters<SandboxService['spawn']>): ReturnType<SandboxService['spawn']> {
    return this.#svc.spawn(this.#sandbox(id), ...rest);
  }

  attach(...[id, ...rest]: Parameters<SandboxService['attach']>): ReturnType<SandboxService['attach']> {
    return this.#svc.attach(this.#sandbox(id), ...rest);
  }

  watch(...[id, ...rest]: Parameters<SandboxService['watch']>): ReturnType<SandboxService['watch']> {
    return this.#svc.watch(this.#sandbox(id), ...rest);
  }

  metrics(id: string): ReturnType<SandboxService['metrics']> {
    return this.#svc.metrics(this.#sandbox(id));
  }

  connectPort(id: string, port: number): ReturnType<SandboxService['connectPort']> {
    return this.#svc.connectPort(this.#sandbox(id), port);
  }

  templates(): TemplateInfo[] {
    return this.#svc.templates().filter((t) => this.#templateVisible(t.name));
  }

  snapshot(id: string, opts: { name?: string | undefined }): Promise<SnapshotInfo> {
    return this.#svc.snapshot(this.#sandbox(id), opts);
  }

  timeline(id: string): SnapshotInfo[] {
    return this.#svc.timeline(this.#sandbox(id));
  }

  getSnapshot(snapId: string): SnapshotInfo {
    return this.#snapshot(snapId);
  }

  pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo> {
    return this.#svc.pinSnapshot(this.#snapshot(snapId).id, pinned);
  }

  deleteSnapshot(snapId: string): Promise<void> {
    return this.#svc.deleteSnapshot(this.#snapshot(snapId).id);
  }

  pause(id: string): Promise<SandboxInfo> {
    return this.#svc.pause(this.#sandbox(id)).then((s) => this.#shown(s));
  }

  setTimeout(id: string, seconds: number): Promise<SandboxInfo> {
    return this.#svc.setTimeout(this.#sandbox(id), seconds).then((s) => this.#shown(s));
  }

  resume(id: string): Promise<SandboxInfo> {
    return this.#svc.resume(this.#sandbox(id)).then((s) => this.#shown(s));
  }

  rewind(id: string, snapId: string): Promise<SandboxInfo> {
    this.#snapshot(snapId);
    return this.#svc.rewind(this.#sandbox(id), snapId).then((s) => this.#shown(s));
  }

  /** Forks belong to the tenant of their source, never to anyone else. */
  async fork(source: string, count: number): Promise<SandboxInfo[]> {
    if (source.startsWith('snap-')) this.#snapshot(source);
    else this.#sandbox(source);
    return this.#adopt(await this.#svc.fork(source, count));
  }

  tree(id: string): ForkTree {
    const prune = (t: ForkTree): ForkTree => ({ sandbox: t.sandbox, children: t.children.filter((c) => this.#owns(c.sandbox.id)).map(prune) });
    return prune(this.#svc.tree(this.#sandbox(id)));
  }

  async buildTemplate(req: BuildTemplateRequest, progress: (line: string) => void): Promise<TemplateInfo> {
    const from = req.from ?? 'base';
    if (!this.#templateVisible(from)) throw new ForkdError('NOT_FOUND', `template ${from} not found`);
    if (this.#control.owner('template', req.name) !== undefined && !this.#templateVisible(req.name)) throw new ForkdError('ALREADY_EXISTS', `template name ${req.name} is taken`);
    const t = await this.#svc.buildTemplate(req, progress);
    this.#control.setOwner('template', t.name, this.#tenant);
    return t;
  }

  /** Node-wide: only the admin-only metrics endpoint asks, through the unscoped service. */
  stats(): ReturnType<SandboxService['stats']> {
    throw new ForkdError('PERMISSION_DENIED', 'node statistics are not tenant-scoped');
  }

  deleteTemplate(name: string): Promise<void> {
    const o = this.#control.owner('template', name);
    if (o !== undefined && o !== this.#tenant) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
    if (o === undefined) throw new ForkdError('PERMISSION_DENIED', `template ${name} is shared by every tenant and cannot be deleted through the API`);
    return this.#svc.deleteTemplate(name);
  }
}
