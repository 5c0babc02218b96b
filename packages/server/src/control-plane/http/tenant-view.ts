import { ForkdError, type BuildTemplateRequest, type CreateSandboxRequest, type SandboxInfo, type SetNetworkRequest, type NodeCredential, type SnapshotInfo, type TemplateInfo, type BuildProgress } from '@forkd/protocol';
import type { ClaimSandbox, ForkOptions, ForkTree, NodeService, PauseOptions, ResumeOptions } from '../../node-contract/index.js';
import type { ControlStore } from '../../store/control-store.js';
import { mintProxyToken } from '../auth/proxy-tokens.js';
import { imageSourceRefusal } from '../image-source-gate.js';
import { dockerfileImage, sourceTemplateOf } from '../../shared/dockerfile/dockerfile-source.js';

/**
 * The NodeService as one tenant sees it: only its own sandboxes, their
 * snapshots, and its own or the shared templates. Anything else answers
 * exactly like an id that does not exist, so ids never leak across tenants.
 * Ownership is the control plane's: nodes know nothing of tenants.
 */
export class TenantView implements NodeService {
  readonly #svc: NodeService;
  readonly #control: ControlStore;
  readonly #tenant: string;
  readonly #admin: boolean;

  constructor(svc: NodeService, control: ControlStore, tenant: string, admin = false) {
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
  async #owns(id: string): Promise<boolean> {
    const o = await this.#control.owner('sandbox', id);
    return o === undefined ? this.#admin : o === this.#tenant;
  }

  /** Written before the node records the sandbox (see ClaimSandbox); a fresh id owned by anyone else is refused. */
  readonly #claim: ClaimSandbox = async (id) => {
    if ((await this.#control.claimOwner('sandbox', id, this.#tenant)) !== this.#tenant) throw new ForkdError('CONFLICT', `sandbox id ${id} is already taken`);
  };

  async #sandbox(id: string): Promise<string> {
    if (!(await this.#owns(id))) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
    return id;
  }

  async #snapshot(snapId: string): Promise<SnapshotInfo> {
    const s = await this.#svc.getSnapshot(snapId);
    if (!(await this.#owns(s.sandboxId))) throw new ForkdError('NOT_FOUND', `snapshot ${snapId} not found`);
    return s;
  }

  /** Templates nobody owns (the base ones) are shared. */
  async #templateVisible(name: string): Promise<boolean> {
    const o = await this.#control.owner('template', name);
    return o === undefined || o === this.#tenant;
  }

  /**
   * New sandboxes (forks too) get a fresh proxy token, shown in this answer
   * only (only its hash is kept): nothing is inherited from a parent. The
   * owner was claimed before the node made them; claimed again here in case
   * a service did not call the claim, so none is ever left unowned.
   */
  async #adopt(sandboxes: SandboxInfo[]): Promise<SandboxInfo[]> {
    const out: SandboxInfo[] = [];
    for (const s of sandboxes) {
      await this.#claim(s.id);
      out.push({ ...s, proxyToken: await mintProxyToken(this.#control, s.id) });
    }
    return out;
  }

  /** Later answers never carry the token: it exists in plain text only in the answer that minted it. */
  #shown(s: SandboxInfo): SandboxInfo {
    const { proxyToken: _, ...rest } = s;
    return rest;
  }

  async create(req: CreateSandboxRequest): Promise<SandboxInfo> {
    const template = req.template ?? 'base';
    if (!(await this.#templateVisible(template))) throw new ForkdError('NOT_FOUND', `template ${template} not found`);
    return (await this.#adopt([await this.#svc.create(req, this.#claim)]))[0]!;
  }

  async get(id: string): Promise<SandboxInfo> {
    return this.#shown(await this.#svc.get(await this.#sandbox(id)));
  }

  async list(): Promise<SandboxInfo[]> {
    const mine = await this.#control.owned('sandbox', this.#tenant);
    const all = await this.#svc.list();
    const out: SandboxInfo[] = [];
    for (const s of all) if (mine.has(s.id) || (this.#admin && (await this.#control.owner('sandbox', s.id)) === undefined)) out.push(this.#shown(s));
    return out;
  }

  async delete(id: string): Promise<void> {
    return this.#svc.delete(await this.#sandbox(id));
  }

  async setTimeout(id: string, seconds: number): Promise<SandboxInfo> {
    return this.#shown(await this.#svc.setTimeout(await this.#sandbox(id), seconds));
  }

  async setCredentials(id: string, credentials: NodeCredential[]): Promise<void> {
    await this.#svc.setCredentials(await this.#sandbox(id), credentials);
  }

  async setNetwork(id: string, rules: SetNetworkRequest): Promise<SandboxInfo> {
    return this.#shown(await this.#svc.setNetwork(await this.#sandbox(id), rules));
  }

  async metrics(id: string): ReturnType<NodeService['metrics']> {
    return this.#svc.metrics(await this.#sandbox(id));
  }

  async spawn(...[id, ...rest]: Parameters<NodeService['spawn']>): ReturnType<NodeService['spawn']> {
    return this.#svc.spawn(await this.#sandbox(id), ...rest);
  }

  async attach(...[id, ...rest]: Parameters<NodeService['attach']>): ReturnType<NodeService['attach']> {
    return this.#svc.attach(await this.#sandbox(id), ...rest);
  }

  async listProcesses(id: string): ReturnType<NodeService['listProcesses']> {
    return this.#svc.listProcesses(await this.#sandbox(id));
  }

  async signal(...[id, ...rest]: Parameters<NodeService['signal']>): ReturnType<NodeService['signal']> {
    return this.#svc.signal(await this.#sandbox(id), ...rest);
  }

  async writeStdin(...[id, ...rest]: Parameters<NodeService['writeStdin']>): ReturnType<NodeService['writeStdin']> {
    return this.#svc.writeStdin(await this.#sandbox(id), ...rest);
  }

  async readFile(...[id, ...rest]: Parameters<NodeService['readFile']>): ReturnType<NodeService['readFile']> {
    return this.#svc.readFile(await this.#sandbox(id), ...rest);
  }

  async writeFile(...[id, ...rest]: Parameters<NodeService['writeFile']>): ReturnType<NodeService['writeFile']> {
    return this.#svc.writeFile(await this.#sandbox(id), ...rest);
  }

  async listDir(...[id, ...rest]: Parameters<NodeService['listDir']>): ReturnType<NodeService['listDir']> {
    return this.#svc.listDir(await this.#sandbox(id), ...rest);
  }

  async stat(...[id, ...rest]: Parameters<NodeService['stat']>): ReturnType<NodeService['stat']> {
    return this.#svc.stat(await this.#sandbox(id), ...rest);
  }

  async mkdir(...[id, ...rest]: Parameters<NodeService['mkdir']>): ReturnType<NodeService['mkdir']> {
    return this.#svc.mkdir(await this.#sandbox(id), ...rest);
  }

  async move(...[id, ...rest]: Parameters<NodeService['move']>): ReturnType<NodeService['move']> {
    return this.#svc.move(await this.#sandbox(id), ...rest);
  }

  async remove(...[id, ...rest]: Parameters<NodeService['remove']>): ReturnType<NodeService['remove']> {
    return this.#svc.remove(await this.#sandbox(id), ...rest);
  }

  async watch(...[id, ...rest]: Parameters<NodeService['watch']>): ReturnType<NodeService['watch']> {
    return this.#svc.watch(await this.#sandbox(id), ...rest);
  }

  async connectPort(id: string, port: number): ReturnType<NodeService['connectPort']> {
    return this.#svc.connectPort(await this.#sandbox(id), port);
  }

  async snapshot(id: string, opts: { name?: string | undefined }): Promise<SnapshotInfo> {
    return this.#svc.snapshot(await this.#sandbox(id), opts);
  }

  async timeline(id: string): Promise<SnapshotInfo[]> {
    return this.#svc.timeline(await this.#sandbox(id));
  }

  getSnapshot(snapId: string): Promise<SnapshotInfo> {
    return this.#snapshot(snapId);
  }

  async deleteSnapshot(snapId: string): Promise<void> {
    return this.#svc.deleteSnapshot((await this.#snapshot(snapId)).id);
  }

  async pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo> {
    return this.#svc.pinSnapshot((await this.#snapshot(snapId)).id, pinned);
  }

  async pause(id: string, opts?: PauseOptions): Promise<SandboxInfo> {
    return this.#shown(await this.#svc.pause(await this.#sandbox(id), opts));
  }

  async resume(id: string, opts?: ResumeOptions): Promise<SandboxInfo> {
    return this.#shown(await this.#svc.resume(await this.#sandbox(id), opts));
  }

  async rewind(id: string, snapId: string): Promise<SandboxInfo> {
    await this.#snapshot(snapId);
    return this.#shown(await this.#svc.rewind(await this.#sandbox(id), snapId));
  }

  /** Forks belong to the tenant of their source, never to anyone else. */
  async fork(source: string, count: number, _claim?: ClaimSandbox, opts?: ForkOptions): Promise<SandboxInfo[]> {
    if (source.startsWith('snap-')) await this.#snapshot(source);
    else await this.#sandbox(source);
    return this.#adopt(await this.#svc.fork(source, count, this.#claim, opts));
  }

  async tree(id: string): Promise<ForkTree> {
    const prune = async (t: ForkTree): Promise<ForkTree> => {
      const children: ForkTree[] = [];
      for (const c of t.children) if (await this.#owns(c.sandbox.id)) children.push(await prune(c));
      return { sandbox: t.sandbox, children };
    };
    return prune(await this.#svc.tree(await this.#sandbox(id)));
  }

  async templates(): Promise<TemplateInfo[]> {
    const out: TemplateInfo[] = [];
    for (const t of await this.#svc.templates()) if (await this.#templateVisible(t.name)) out.push(t);
    return out;
  }

  async buildTemplate(req: BuildTemplateRequest, progress: BuildProgress): Promise<TemplateInfo> {
    // The node's apt fetches them from the operator's sources onto the node's disk: an operator's choice.
    if (req.aptPackages?.length && !this.#admin) throw new ForkdError('PERMISSION_DENIED', 'aptPackages needs an admin key');
    const image = req.dockerfile !== undefined ? dockerfileImage(req.dockerfile, req.buildArgs) : req.fromImage;
    const from = sourceTemplateOf(req);
    if (image !== undefined) {
      const refusal = imageSourceRefusal(image, this.#admin);
      if (refusal) throw new ForkdError('PERMISSION_DENIED', refusal);
    } else if (from !== undefined && !(await this.#templateVisible(from))) throw new ForkdError('NOT_FOUND', `template ${from} not found`);
    // The name is reserved when the build starts, in one atomic claim: of two
    // tenants racing, the second answers ALREADY_EXISTS. A shared template (no
    // owner, like `base`) is rebuilt by admin keys only and stays shared.
    const taken = () => new ForkdError('ALREADY_EXISTS', `template name ${req.name} is taken`);
    const exists = async () => (await this.#svc.templates()).some((t) => t.name === req.name);
    const prior = await this.#control.owner('template', req.name);
    let reserved = false;
    if (req.shared) {
      if (!this.#admin) throw new ForkdError('PERMISSION_DENIED', 'a shared template needs an admin key');
      // A tenant's template does not become everyone's by a rebuild: that would publish what the tenant built.
      if (prior !== undefined) throw taken();
    } else if (prior === undefined) {
      if (await exists()) {
        if (!this.#admin) throw taken();
      } else {
        if ((await this.#control.claimOwner('template', req.name, this.#tenant)) !== this.#tenant) throw taken();
        reserved = true;
      }
    } else if (prior !== this.#tenant) throw taken();
    try {
      // The build sandbox is the tenant's from its first instant, like any sandbox it creates.
      return await this.#svc.buildTemplate(req, progress, this.#claim);
    } catch (err) {
      // A failed first build gives the name back; a failed rebuild keeps the template and its owner.
      if (reserved && !(await exists())) await this.#control.dropOwner('template', req.name);
      throw err;
    }
  }

  async deleteTemplate(name: string): Promise<void> {
    const o = await this.#control.owner('template', name);
    if (o !== undefined && o !== this.#tenant) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
    if (o === undefined) throw new ForkdError('PERMISSION_DENIED', `template ${name} is shared by every tenant and cannot be deleted through the API`);
    await this.#svc.deleteTemplate(name);
    await this.#control.dropOwner('template', name);
  }

  /** The control plane's own (migration, a lost node's restore), through the unscoped service: no tenant key reaches it, admin keys included. */
  async exportSnapshot(): ReturnType<NodeService['exportSnapshot']> {
    throw new ForkdError('PERMISSION_DENIED', 'snapshot export is not tenant-scoped');
  }

  async importSnapshot(): ReturnType<NodeService['importSnapshot']> {
    throw new ForkdError('PERMISSION_DENIED', 'snapshot import is not tenant-scoped');
  }

  /** The control plane's own (a template copied to where a create needs it), through the unscoped service. */
  async exportTemplate(): ReturnType<NodeService['exportTemplate']> {
    throw new ForkdError('PERMISSION_DENIED', 'template export is not tenant-scoped');
  }

  async importTemplate(): ReturnType<NodeService['importTemplate']> {
    throw new ForkdError('PERMISSION_DENIED', 'template import is not tenant-scoped');
  }

  /** Node-wide: only the admin-only metrics endpoint asks, through the unscoped service. */
  async stats(): ReturnType<NodeService['stats']> {
    throw new ForkdError('PERMISSION_DENIED', 'node statistics are not tenant-scoped');
  }
}
