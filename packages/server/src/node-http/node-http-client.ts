import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { guardListener } from '../shared/connection-guard.js';
import { ForkdError, fromErrorBody, type BuildProgress } from '@forkd/protocol';
import type { BuildTemplateRequest, CreateSandboxRequest, FileEntry, ProcessInfo, SandboxInfo, SandboxMetrics, SetNetworkRequest, SnapshotInfo, TemplateInfo, WatchEvent, NodeCredential } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type {
  ClaimSandbox,
  ForkOptions,
  PauseOptions,
  ResumeOptions,
  FileContent,
  ForkTree,
  ImportSnapshotOptions,
  NodeStats,
  OutputHandlers,
  PortConnection,
  ProcessSelector,
  ResumePoint,
  ProcessStream,
  SnapshotExport,
  SpawnOptions,
  TemplateExport,
  WatchHandle,
  WriteFileOptions,
} from '../node-contract/node-types.js';
import { ndjsonLines, NodeTransport, type NodeEndpoint } from './node-transport.js';
import { openProcessStream } from './remote-process.js';
import { PORT_CONNECTION_HEADER, PORT_UPGRADE, selectorSegment, toSpawnRequest, type BuildLine, type WatchLine } from './node-wire.js';

const e = encodeURIComponent;
const sbx = (id: string) => `/sandboxes/${e(id)}`;

/**
 * The node contract spoken to a `forkd serve --role node` over HTTP (the
 * wire format is described in node-http-server.ts). Errors the node answers
 * are rethrown with their code; a node that cannot be reached is UNAVAILABLE.
 *
 * Claims are weaker than in process: a ClaimSandbox cannot cross the wire
 * before the node records the sandbox, so the client claims each new id
 * right after the node answers (create, fork, a build's `claim` line) and,
 * if a claim throws, deletes those sandboxes and rethrows. A control plane
 * that dies between the two leaves a sandbox without an owner, which only
 * admin keys see (and may delete). Accepted for now.
 */
export class NodeHttpClient implements NodeService {
  readonly #t: NodeTransport;

  constructor(endpoint: NodeEndpoint) {
    this.#t = new NodeTransport(endpoint);
  }

  /** Lets go of idle connections to the node (open streams are the caller's to close). */
  close(): void {
    this.#t.close();
  }

  /** Claims each new sandbox; when one claim throws, deletes them all and rethrows (see the class comment). */
  async #claimed(ids: string[], claim: ClaimSandbox | undefined): Promise<void> {
    if (!claim) return;
    try {
      for (const id of ids) await claim(id);
    } catch (err) {
      for (const id of ids) await this.delete(id).catch(() => {});
      throw err;
    }
  }

  async create(req: CreateSandboxRequest, claim?: ClaimSandbox): Promise<SandboxInfo> {
    const s = await this.#t.call<SandboxInfo>('POST', '/sandboxes', { json: req, kind: 'lifecycle' });
    await this.#claimed([s.id], claim);
    return s;
  }

  async get(id: string): Promise<SandboxInfo> {
    return this.#t.call('GET', sbx(id));
  }

  async list(): Promise<SandboxInfo[]> {
    return (await this.#t.call<{ sandboxes: SandboxInfo[] }>('GET', '/sandboxes')).sandboxes;
  }

  async delete(id: string): Promise<void> {
    await this.#t.call('DELETE', sbx(id), { kind: 'lifecycle' });
  }

  async setTimeout(id: string, seconds: number): Promise<SandboxInfo> {
    return this.#t.call('POST', `${sbx(id)}/timeout`, { json: { timeoutSeconds: seconds }, kind: 'lifecycle' });
  }

  async setNetwork(id: string, rules: SetNetworkRequest): Promise<SandboxInfo> {
    return this.#t.call('PUT', `${sbx(id)}/network`, { json: rules, kind: 'lifecycle' });
  }

  async setCredentials(id: string, credentials: NodeCredential[]): Promise<void> {
    await this.#t.call('PUT', `${sbx(id)}/credentials`, { json: { credentials }, kind: 'lifecycle' });
  }

  async metrics(id: string): Promise<SandboxMetrics> {
    return this.#t.call('GET', `${sbx(id)}/metrics`);
  }

  async spawn(id: string, opts: SpawnOptions, handlers?: OutputHandlers): Promise<ProcessStream> {
    return openProcessStream(this.#t, id, `${sbx(id)}/processes`, toSpawnRequest(opts), handlers);
  }

  async attach(id: string, sel: ProcessSelector, handlers?: OutputHandlers, resume?: ResumePoint): Promise<ProcessStream> {
    return openProcessStream(this.#t, id, `${sbx(id)}/processes/${e(selectorSegment(sel))}/attach`, resume ? { resume } : {}, handlers);
  }

  async listProcesses(id: string): Promise<ProcessInfo[]> {
    return (await this.#t.call<{ processes: ProcessInfo[] }>('GET', `${sbx(id)}/processes`)).processes;
  }

  async signal(id: string, sel: ProcessSelector, signal: number): Promise<void> {
    await this.#t.call('POST', `${sbx(id)}/processes/${e(selectorSegment(sel))}/signal`, { json: { signal }, kind: 'lifecycle' });
  }

  async writeStdin(id: string, sel: ProcessSelector, data: Buffer | undefined, eof: boolean): Promise<void> {
    await this.#t.call('POST', `${sbx(id)}/processes/${e(selectorSegment(sel))}/stdin`, { json: { ...(data ? { data: data.toString('base64') } : {}), eof }, kind: 'lifecycle' });
  }

  async readFile(id: string, path: string): Promise<FileContent> {
    const res = await this.#t.opened('GET', `${sbx(id)}/files`, { query: { path } });
    return { size: Number(res.headers['content-length'] ?? 0), chunks: res as AsyncIterable<Buffer> };
  }

  async writeFile(id: string, path: string, data: AsyncIterable<Uint8Array> | Uint8Array, opts: WriteFileOptions = {}): Promise<number> {
    // Metadata travels as the public API's `metadata` query (a JSON object), validated by the same schema.
    const metadata = opts.metadata ? JSON.stringify(opts.metadata) : undefined;
    const query = { path, mode: opts.mode, append: opts.append ? 'true' : undefined, user: opts.user, metadata, metadataScope: opts.metadata ? opts.metadataScope : undefined };
    return (await this.#t.call<{ size: number }>('PUT', `${sbx(id)}/files`, { query, body: data, kind: 'lifecycle' })).size;
  }

  async listDir(id: string, path: string, depth?: number): Promise<FileEntry[]> {
    return (await this.#t.call<{ entries: FileEntry[] }>('GET', `${sbx(id)}/files/list`, { query: { path, depth } })).entries;
  }

  async stat(id: string, path: string): Promise<FileEntry> {
    return this.#t.call('GET', `${sbx(id)}/files/stat`, { query: { path } });
  }

  async mkdir(id: string, path: string, user?: string): Promise<void> {
    await this.#t.call('POST', `${sbx(id)}/files/mkdir`, { json: { path, ...(user !== undefined ? { user } : {}) }, kind: 'lifecycle' });
  }

  async move(id: string, from: string, to: string): Promise<void> {
    await this.#t.call('POST', `${sbx(id)}/files/move`, { json: { from, to }, kind: 'lifecycle' });
  }

  async remove(id: string, path: string, recursive?: boolean): Promise<void> {
    await this.#t.call('DELETE', `${sbx(id)}/files`, { query: { path, recursive: recursive ? 'true' : undefined }, kind: 'lifecycle' });
  }

  async watch(id: string, path: string, recursive: boolean, onEvent: (e: WatchEvent) => void | Promise<void>): Promise<WatchHandle> {
    const abort = new AbortController();
    const { res, lines, first } = await this.#t.openLines<WatchLine>('POST', `${sbx(id)}/watch`, { json: { path, recursive }, signal: abort.signal });
    if (first.done) throw new ForkdError('UNAVAILABLE', `node ${this.#t.url} ended the watch before it started`);
    const head = first.value;
    if (head.type === 'error') throw fromErrorBody(head, 500);
    // Ends for good (as in process, `done` never rejects): closed, ended by the node, or the connection lost.
    const done = (async () => {
      try {
        if (head.type === 'event') await onEvent(head.event);
        for await (const l of lines) {
          if (l.type === 'event') await onEvent(l.event);
          else if (l.type !== 'ready') return;
        }
      } catch {
        /* closed or lost: the watch is over either way */
      } finally {
        if (!res.complete && !res.destroyed) res.destroy();
      }
    })();
    return { close: () => abort.abort(), done };
  }

  async connectPort(id: string, port: number): Promise<PortConnection> {
    const t = this.#t;
    const mod = t.module();
    return new Promise<PortConnection>((resolve, reject) => {
      const path = `${sbx(id)}/ports/${port}`;
      const req = mod.request({ ...t.options('GET', path, undefined, { connection: 'Upgrade', upgrade: PORT_UPGRADE }), agent: false });
      // The upgrade (or the node's refusal) within the deadline; the connection then lasts as long as its ends want.
      const deadline = t.deadline('lifecycle', 'GET', path);
      deadline.hold(req);
      deadline.arm();
      req.on('upgrade', () => deadline.clear());
      req.on('upgrade', guardListener('node-http', (err) => {
        req.destroy();
        reject(t.unavailable(err as Error));
      }, (res: IncomingMessage, socket: Duplex, head: Buffer) => {
        socket.on('error', () => {});
        if (head.length) socket.unshift(head);
        const cid = String(res.headers[PORT_CONNECTION_HEADER] ?? '');
        const done = new Promise<{ refused: boolean; error?: string | undefined }>((settle) => {
          socket.once('close', () => {
            t.call<{ refused: boolean; error?: string }>('GET', `/port-connections/${e(cid)}`).then(settle, (err: unknown) => settle({ refused: false, error: (err as Error).message }));
          });
        });
        resolve({ stream: socket, done, close: () => socket.destroy() });
      }));
      req.on('response', (res) => {
        res.on('error', () => {});
        deadline.hold(res);
        void t.failure(res).then(reject, reject).finally(() => deadline.clear());
      });
      req.on('error', (err) => {
        deadline.clear();
        reject(t.unavailable(err));
      });
      req.end();
    });
  }

  async snapshot(id: string, opts: { name?: string | undefined }): Promise<SnapshotInfo> {
    return this.#t.call('POST', `${sbx(id)}/snapshots`, { json: opts.name !== undefined ? { name: opts.name } : {}, kind: 'lifecycle' });
  }

  async timeline(id: string): Promise<SnapshotInfo[]> {
    return (await this.#t.call<{ snapshots: SnapshotInfo[] }>('GET', `${sbx(id)}/snapshots`)).snapshots;
  }

  async getSnapshot(snapId: string): Promise<SnapshotInfo> {
    return this.#t.call('GET', `/snapshots/${e(snapId)}`);
  }

  async deleteSnapshot(snapId: string): Promise<void> {
    await this.#t.call('DELETE', `/snapshots/${e(snapId)}`, { kind: 'lifecycle' });
  }

  async pinSnapshot(snapId: string, pinned: boolean): Promise<SnapshotInfo> {
    return this.#t.call('POST', `/snapshots/${e(snapId)}/pin`, { json: { pinned }, kind: 'lifecycle' });
  }

  async pause(id: string, opts: PauseOptions = {}): Promise<SandboxInfo> {
    return this.#t.call('POST', `${sbx(id)}/pause`, { json: opts.memory === false ? { memory: false } : {}, kind: 'lifecycle' });
  }

  async resume(id: string, opts: ResumeOptions = {}): Promise<SandboxInfo> {
    return this.#t.call('POST', `${sbx(id)}/resume`, { json: opts.memory === false ? { memory: false } : {}, kind: 'lifecycle' });
  }

  async rewind(id: string, snapId: string): Promise<SandboxInfo> {
    return this.#t.call('POST', `${sbx(id)}/rewind`, { json: { snapshot: snapId }, kind: 'lifecycle' });
  }

  async fork(source: string, count: number, claim?: ClaimSandbox, opts: ForkOptions = {}): Promise<SandboxInfo[]> {
    const json = { count, ...(opts.metadata ? { metadata: opts.metadata } : {}), ...(opts.env ? { env: opts.env } : {}) };
    const { sandboxes } = await this.#t.call<{ sandboxes: SandboxInfo[] }>('POST', `/fork/${e(source)}`, { json, kind: 'lifecycle' });
    await this.#claimed(
      sandboxes.map((s) => s.id),
      claim,
    );
    return sandboxes;
  }

  async tree(id: string): Promise<ForkTree> {
    return this.#t.call('GET', `${sbx(id)}/tree`);
  }

  async templates(): Promise<TemplateInfo[]> {
    return (await this.#t.call<{ templates: TemplateInfo[] }>('GET', '/templates')).templates;
  }

  async buildTemplate(req: BuildTemplateRequest, progress: BuildProgress, claim?: ClaimSandbox): Promise<TemplateInfo> {
    const abort = new AbortController();
    // The whole build within the transfer deadline (its progress lines do not extend it).
    const deadline = this.#t.deadline('transfer', 'POST', '/templates');
    const res = await this.#t.opened('POST', '/templates', { json: req, signal: abort.signal, deadline }).catch((err: unknown) => {
      deadline.clear();
      throw err;
    });
    // The caller's own failures (progress, claim) are rethrown as they are; the connection's are UNAVAILABLE.
    let own: { err: unknown } | undefined;
    const mine = async (f: () => void | Promise<void>) => {
      try {
        await f();
      } catch (err) {
        own = { err };
        throw err;
      }
    };
    try {
      for await (const l of ndjsonLines<BuildLine>(res)) {
        if (l.type === 'progress') await mine(() => progress(l.line, l.step));
        else if (l.type === 'claim') await mine(() => this.#claimed([l.id], claim));
        else if (l.type === 'done') return l.template;
        else if (l.type === 'error') throw fromErrorBody(l, 500);
      }
    } catch (err) {
      if (own) throw own.err;
      throw this.#t.unavailable(err);
    } finally {
      deadline.clear();
      abort.abort();
    }
    throw new ForkdError('UNAVAILABLE', `node ${this.#t.url} ended the build of ${req.name} without its result`);
  }

  async deleteTemplate(name: string): Promise<void> {
    await this.#t.call('DELETE', `/templates/${e(name)}`, { kind: 'lifecycle' });
  }

  async exportSnapshot(snapId: string): Promise<SnapshotExport> {
    return this.#t.call('POST', `/snapshots/${e(snapId)}/export`, { kind: 'transfer' });
  }

  async importSnapshot(manifest: string, opts: ImportSnapshotOptions = {}): Promise<SnapshotInfo> {
    return this.#t.call('POST', '/snapshot-imports', { json: { manifest, ...(opts.asSandbox !== undefined ? { asSandbox: opts.asSandbox } : {}) }, kind: 'transfer' });
  }

  async exportTemplate(name: string): Promise<TemplateExport> {
    return this.#t.call('POST', `/templates/${e(name)}/export`, { kind: 'transfer' });
  }

  async importTemplate(manifest: string): Promise<TemplateInfo> {
    return this.#t.call('POST', '/template-imports', { json: { manifest }, kind: 'transfer' });
  }

  async stats(): Promise<NodeStats> {
    return this.#t.call('GET', '/stats');
  }
}
