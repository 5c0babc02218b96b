import { ForkdError, type BuildTemplateRequest, type CreateSandboxRequest, type SandboxInfo, type SnapshotInfo, type TemplateInfo } from '@forkd/protocol';
import type { GuestClient } from '../../node/guest/guest-client.js';
import type { ForkTree } from '../../node/manager/sandbox-manager.js';
import type { ControlStore } from '../../store/control-store.js';
import { mintProxyToken } from '../auth/proxy-tokens.js';
import type { ClaimSandbox, SandboxService } from './sandbox-service.js';

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
  readonly #admin: boolean;

  constructor(svc: SandboxService, control: ControlStore, tenant: string, admin = false) {
    this.#svc = svc;
    this.#control = control;
    this.#tenant = tenant;
    this.#admin = admin;
  }

  /**
   * A sandbox with no owner (made before tenancy, or an older version's
   * template build) is reachable by admin keys only: falling back to a tenant
   * would hand it to every key of that tenant.
   */
  #owns(id: string): boolean {
    const o = this.#control.owner('sandbox', id);
    return o === undefined ? this.#admin : o === this.#tenant;
  }

  /** Written before the node records the sandbox (see ClaimSandbox); a fresh id owned by anyone else is refused. */
  readonly #claim: ClaimSandbox = (id) => {
    if (this.#control.claimOwner('sandbox', id, this.#tenant) !== this.#tenant) throw new ForkdError('CONFLICT', `sandbox id ${id} is already taken`);
  };

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

  /**
   * New sandboxes (forks too) get a fresh proxy token, shown in this answer
   * only (only its hash is kept): nothing is inherited from a parent. The
   * owner was claimed before the node made them; claimed again here in case
   * a service did not call the claim, so none is ever left unowned.
   */
  #adopt(sandboxes: SandboxInfo[]): SandboxInfo[] {
    return sandboxes.map((s) => {
      this.#claim(s.id);
      return { ...s, proxyToken: mintProxyToken(this.#control, s.id) };
    });
  }

  /** Later answers never carry the token: it exists in plain text only in the answer that minted it. */
  #shown(s: SandboxInfo): SandboxInfo {
    const { proxyToken: _, ...rest } = s;
    return rest;
  }

  async create(req: CreateSandboxRequest): Promise<SandboxInfo> {
    const template = req.template ?? 'base';
    if (!this.#templateVisible(template)) throw new ForkdError('NOT_FOUND', `template ${template} not found`);
    return this.#adopt([await this.#svc.create(req, this.#claim)])[0]!;
  }

  get(id: string): SandboxInfo {
    return this.#shown(this.#svc.get(this.#sandbox(id)));
  }

  list(): SandboxInfo[] {
    const mine = this.#control.owned('sandbox', this.#tenant);
    return this.#svc
      .list()
      .filter((s) => mine.has(s.id) || (this.#admin && this.#control.owner('sandbox', s.id) === undefined))
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
    return this.#adopt(await this.#svc.fork(source, count, this.#claim));
  }

  tree(id: string): ForkTree {
    const prune = (t: ForkTree): ForkTree => ({ sandbox: t.sandbox, children: t.children.filter((c) => this.#owns(c.sandbox.id)).map(prune) });
    return prune(this.#svc.tree(this.#sandbox(id)));
  }

  async buildTemplate(req: BuildTemplateRequest, progress: (line: string) => void | Promise<void>): Promise<TemplateInfo> {
    const from = req.from ?? 'base';
    if (!this.#templateVisible(from)) throw new ForkdError('NOT_FOUND', `template ${from} not found`);
    // The name is reserved when the build starts, in one atomic claim: of two
    // tenants racing, the second answers ALREADY_EXISTS. A shared template (no
    // owner, like `base`) is rebuilt by admin keys only and stays shared.
    const taken = () => new ForkdError('ALREADY_EXISTS', `template name ${req.name} is taken`);
    const exists = () => this.#svc.templates().some((t) => t.name === req.name);
    const prior = this.#control.owner('template', req.name);
    let reserved = false;
    if (prior === undefined) {
      if (exists()) {
        if (!this.#admin) throw taken();
      } else {
        if (this.#control.claimOwner('template', req.name, this.#tenant) !== this.#tenant) throw taken();
        reserved = true;
      }
    } else if (prior !== this.#tenant) throw taken();
    try {
      // The build sandbox is the tenant's from its first instant, like any sandbox it creates.
      return await this.#svc.buildTemplate(req, progress, this.#claim);
    } catch (err) {
      // A failed first build gives the name back; a failed rebuild keeps the template and its owner.
      if (reserved && !exists()) this.#control.dropOwner('template', req.name);
      throw err;
    }
  }

  /** Node-wide: only the admin-only metrics endpoint asks, through the unscoped service. */
  stats(): ReturnType<SandboxService['stats']> {
    throw new ForkdError('PERMISSION_DENIED', 'node statistics are not tenant-scoped');
  }

  async deleteTemplate(name: string): Promise<void> {
    const o = this.#control.owner('template', name);
    if (o !== undefined && o !== this.#tenant) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
    if (o === undefined) throw new ForkdError('PERMISSION_DENIED', `template ${name} is shared by every tenant and cannot be deleted through the API`);
    await this.#svc.deleteTemplate(name);
    this.#control.dropOwner('template', name);
  }
}
