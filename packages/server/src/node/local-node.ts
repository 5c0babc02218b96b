import type { BuildTemplateRequest, CreateSandboxRequest, FileEntry, ProcessInfo, SandboxInfo, SandboxMetrics, SetNetworkRequest, SnapshotInfo, TemplateInfo, WatchEvent, NodeCredential, BuildProgress } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type {
  ClaimSandbox,
  ForkOptions,
  PauseOptions,
  ResumeOptions,
  ResumePoint,
  FileContent,
  ForkTree,
  ImportSnapshotOptions,
  NodeStats,
  OutputHandlers,
  PortConnection,
  ProcessSelector,
  ProcessStream,
  SnapshotExport,
  SpawnOptions,
  TemplateExport,
  WatchHandle,
  WriteFileOptions,
} from '../node-contract/node-types.js';
import type { SandboxManager } from './manager/sandbox-manager.js';
import { buildTemplate } from './templates/template-builder.js';
import { isStageName, type TemplateRegistry } from './templates/template-registry.js';
import type { ImageVolumes } from './images/image-volumes.js';
import type { StepCache } from './dockerfile/step-cache.js';
import { ForkdError } from '@forkd/protocol';
import type { NodeCredentials } from './secrets/node-credentials.js';

/**
 * The node contract in this process: a thin adapter over the SandboxManager.
 * Lifecycle calls delegate; process and file calls go to the sandbox's guest
 * link (`manager.guest` resumes a hibernated sandbox and counts as activity).
 * No logic of its own: what a node does lives in the manager (and, for
 * template builds, in the builder above it).
 */
export class LocalNode implements NodeService {
  readonly #m: SandboxManager;
  readonly #templates: TemplateRegistry;
  readonly #credentials: NodeCredentials;
  readonly #images: ImageVolumes | undefined;
  readonly #steps: StepCache | undefined;

  constructor(manager: SandboxManager, templates: TemplateRegistry, credentials: NodeCredentials, images?: ImageVolumes, steps?: StepCache) {
    this.#m = manager;
    this.#templates = templates;
    this.#credentials = credentials;
    this.#images = images;
    this.#steps = steps;
  }

  async create(req: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo> {
    // A build's staged image root is the build's alone (template-registry.ts, STAGE_PREFIX).
    if (req.template !== undefined && isStageName(req.template)) throw new ForkdError('NOT_FOUND', `template ${req.template} not found`);
    return this.#m.create(req, claim);
  }

  async get(id: string): Promise<SandboxInfo> {
    return await this.#m.get(id);
  }

  async list(): Promise<SandboxInfo[]> {
    return await this.#m.list();
  }

  async delete(id: string): Promise<void> {
    await this.#m.delete(id);
    await this.#credentials.forget(id);
  }

  async setTimeout(id: string, seconds: number): Promise<SandboxInfo> {
    return this.#m.setTimeout(id, seconds);
  }

  async setNetwork(id: string, rules: SetNetworkRequest): Promise<SandboxInfo> {
    return this.#m.setNetwork(id, rules);
  }

  async setCredentials(id: string, credentials: NodeCredential[]): Promise<void> {
    await this.#m.get(id);
    await this.#credentials.set(this, id, credentials);
  }

  async metrics(id: string): Promise<SandboxMetrics> {
    return this.#m.metrics(id);
  }

  async spawn(id: string, opts: SpawnOptions, handlers?: OutputHandlers): Promise<ProcessStream> {
    return this.#m.spawn(id, opts, handlers);
  }

  async attach(id: string, sel: ProcessSelector, handlers?: OutputHandlers, resume?: ResumePoint): Promise<ProcessStream> {
    return this.#m.attach(id, sel, handlers, resume);
  }

  async listProcesses(id: string): Promise<ProcessInfo[]> {
    return (await this.#m.guest(id)).listProcesses();
  }

  async signal(id: string, sel: ProcessSelector, signal: number): Promise<void> {
    await (await this.#m.guest(id)).kill(sel, signal);
  }

  async writeStdin(id: string, sel: ProcessSelector, data: Buffer | undefined, eof: boolean): Promise<void> {
    await (await this.#m.guest(id)).writeStdin(sel, data, eof);
  }

  async readFile(id: string, path: string): Promise<FileContent> {
    return (await this.#m.guest(id)).readFile(path);
  }

  async writeFile(id: string, path: string, data: AsyncIterable<Uint8Array> | Uint8Array, opts?: WriteFileOptions): Promise<number> {
    return (await this.#m.guest(id)).writeFile(path, data, opts);
  }

  async listDir(id: string, path: string, depth?: number): Promise<FileEntry[]> {
    return (await this.#m.guest(id)).listDir(path, depth);
  }

  async stat(id: string, path: string): Promise<FileEntry> {
    return (await this.#m.guest(id)).stat(path);
  }

  async mkdir(id: string, path: string, user?: string): Promise<void> {
    await (await this.#m.guest(id)).mkdir(path, user);
  }

  async move(id: string, from: string, to: string): Promise<void> {
    await (await this.#m.guest(id)).move(from, to);
  }

  async remove(id: string, path: string, recursive?: boolean): Promise<void> {
    await (await this.#m.guest(id)).remove(path, recursive);
  }

  async watch(id: string, path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<WatchHandle> {
    return this.#m.watch(id, path, recursive, onEvent);
  }

  async connectPort(id: string, port: number): Promise<PortConnection> {
    return this.#m.connectPort(id, port);
  }

  async snapshot(id: string, opts: { name?: string | undefined }): Promise<SnapshotInfo> {
    return this.#m.snapshot(id, opts);
  }

  async timeline(id: string): Promise<SnapshotInfo[]> {
    return await this.#m.timeline(id);
  }

  async getSnapshot(snapId: string): Promise<SnapshotInfo> {
    return await this.#m.getSnapshot(snapId);
  }

  async deleteSnapshot(snapId: string): Promise<void> {
    await this.#m.deleteSnapshot(snapId);
  }

  async pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo> {
    return this.#m.pinSnapshot(snapId, pinned);
  }

  async pause(id: string, opts?: PauseOptions): Promise<SandboxInfo> {
    return this.#m.pause(id, opts);
  }

  async resume(id: string, opts?: ResumeOptions): Promise<SandboxInfo> {
    return this.#m.resume(id, opts);
  }

  async rewind(id: string, snapId: string): Promise<SandboxInfo> {
    const info = await this.#m.rewind(id, snapId);
    // The disk went back too, perhaps to before the sandbox trusted its CA.
    await this.#credentials.rewound(this, id);
    return info;
  }

  async fork(source: string, count: number, claim?: ClaimSandbox, opts?: ForkOptions): Promise<SandboxInfo[]> {
    return this.#m.fork(source, count, claim, opts);
  }

  async tree(id: string): Promise<ForkTree> {
    return await this.#m.tree(id);
  }

  async templates(): Promise<TemplateInfo[]> {
    return await this.#m.templates();
  }

  async buildTemplate(req: BuildTemplateRequest, progress: BuildProgress, claim?: ClaimSandbox): Promise<TemplateInfo> {
    // Policy above the manager: the build drives a sandbox through the manager's public methods.
    const before = (await this.#templates.get(req.name))?.createdAt;
    const t = await buildTemplate(this.#m, this.#templates, { images: this.#images, steps: this.#steps }, req, progress, claim);
    // Its first sandbox is likely soon: one is started ahead (warm-pool.ts), none of what a rebuild replaced kept.
    if (t.createdAt !== before) this.#m.warmPool.forget(t.name);
    this.#m.warmPool.want(t.name);
    // Part of the build's time, so a create right after it (E2B's build-then-create) adopts.
    await this.#m.warmPool.settled();
    return t;
  }

  async deleteTemplate(name: string): Promise<void> {
    await this.#m.deleteTemplate(name);
  }

  async exportSnapshot(snapId: string): Promise<SnapshotExport> {
    return this.#m.exportSnapshot(snapId);
  }

  async importSnapshot(manifest: string, opts?: ImportSnapshotOptions): Promise<SnapshotInfo> {
    return this.#m.importSnapshot(manifest, opts);
  }

  async exportTemplate(name: string): Promise<TemplateExport> {
    return this.#m.exportTemplate(name);
  }

  async importTemplate(manifest: string): Promise<TemplateInfo> {
    return this.#m.importTemplate(manifest);
  }

  async stats(): Promise<NodeStats> {
    return this.#m.stats();
  }
}
