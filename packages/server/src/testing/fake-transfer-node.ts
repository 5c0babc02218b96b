import { ForkdError, newSandboxId, type SandboxInfo, type SnapshotInfo, type TemplateInfo } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { ImportSnapshotOptions, SnapshotExport } from '../node-contract/node-types.js';
import { sandboxInfo } from './sandbox-info.js';

/** Where fake nodes' exports go: manifest key → the snapshot it carries. */
export type FakeBlobs = Map<string, SnapshotInfo>;
/** Where fake nodes' template exports go: manifest key → the template it carries. */
export type FakeTemplateBlobs = Map<string, TemplateInfo>;

let clock = Date.parse('2030-01-01T00:00:00Z');
let seq = 0;

/** A snapshot of `sandboxId`, each newer than the one made before it. */
export function fakeSnapshot(sandboxId: string, extra: Partial<SnapshotInfo> = {}): SnapshotInfo {
  clock += 1000;
  return { id: `snap-${String(++seq).padStart(12, '0')}`, sandboxId, createdAt: new Date(clock).toISOString(), frozenMs: 1, sizeBytes: 1, pinned: false, reason: 'manual', ...extra };
}

/**
 * Just what the fleet's moves need of a node (sandboxes with their
 * timelines, pause, export into and import from shared fake blobs, delete),
 * for unit tests of their logic; every other call is NOT_IMPLEMENTED. The
 * real contract is the node conformance suite's.
 */
export class FakeTransferNode {
  readonly sandboxes = new Map<string, { info: SandboxInfo; timeline: SnapshotInfo[] }>();
  /** Sandboxes whose snapshots fail to export (UNAVAILABLE). */
  readonly failExportsOf = new Set<string>();
  /** Calls that fail (UNAVAILABLE), whatever their arguments. */
  readonly failing = new Set<string>();
  /** Templates here, by name (`base` to start with). */
  readonly templates = new Map<string, TemplateInfo>([['base', { name: 'base', id: 'base', createdAt: new Date(0).toISOString() }]]);
  /** Calls made of the template transfer (`export:<name>`, `import:<manifest>`), in order. */
  readonly templateCalls: string[] = [];
  /** While set, template imports wait for it (concurrent copies meet here). */
  importGate: Promise<void> | undefined;
  readonly #blobs: FakeBlobs;
  readonly #templateBlobs: FakeTemplateBlobs;

  constructor(blobs: FakeBlobs, templateBlobs: FakeTemplateBlobs = new Map()) {
    this.#blobs = blobs;
    this.#templateBlobs = templateBlobs;
  }

  /** A sandbox here with these snapshots (oldest first). */
  add(id: string, state: SandboxInfo['state'], timeline: SnapshotInfo[]): void {
    this.sandboxes.set(id, { info: sandboxInfo(id, { state }), timeline: [...timeline] });
  }

  #of(id: string) {
    const s = this.sandboxes.get(id);
    if (!s) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
    return s;
  }

  /** Creates from templates held here, and templates through the fake blobs (the real ones: the node conformance and transfer tests). */
  #templateCalls(): Partial<NodeService> {
    return {
      templates: async () => [...this.templates.values()],
      create: async (req, claim) => {
        if (!this.templates.has(req.template ?? 'base')) throw new ForkdError('NOT_FOUND', `template ${req.template} not found`);
        const id = newSandboxId();
        await claim?.(id);
        this.add(id, 'running', []);
        return this.#of(id).info;
      },
      exportTemplate: async (name) => {
        this.templateCalls.push(`export:${name}`);
        const t = this.templates.get(name);
        if (!t) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
        const manifest = `templates/${name}/${t.id}/template.json`;
        this.#templateBlobs.set(manifest, t);
        return { manifest, bytesUploaded: 1 };
      },
      importTemplate: async (manifest) => {
        this.templateCalls.push(`import:${manifest}`);
        await this.importGate;
        const t = this.#templateBlobs.get(manifest);
        if (!t) throw new ForkdError('NOT_FOUND', `no manifest ${manifest}`);
        const have = this.templates.get(t.name);
        if (have && have.id !== t.id) throw new ForkdError('ALREADY_EXISTS', `another template named ${t.name}`);
        this.templates.set(t.name, t);
        return t;
      },
      deleteTemplate: async (name) => {
        if (!this.templates.delete(name)) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
      },
    };
  }

  get service(): NodeService {
    const impl: Partial<NodeService> = {
      ...this.#templateCalls(),
      list: async () => [...this.sandboxes.values()].map((s) => s.info),
      get: async (id) => this.#of(id).info,
      timeline: async (id) => [...this.#of(id).timeline],
      pause: async (id) => {
        const s = this.#of(id);
        if (s.info.state !== 'running') throw new ForkdError('FAILED_PRECONDITION', `sandbox ${id} is ${s.info.state}`);
        s.timeline.push(fakeSnapshot(id, { reason: 'pause' }));
        s.info = { ...s.info, state: 'paused' };
        return s.info;
      },
      delete: async (id) => {
        this.#of(id);
        this.sandboxes.delete(id);
      },
      exportSnapshot: async (snapId): Promise<SnapshotExport> => {
        const snap = [...this.sandboxes.values()].flatMap((s) => s.timeline).find((x) => x.id === snapId);
        if (!snap) throw new ForkdError('NOT_FOUND', `snapshot ${snapId} not found`);
        if (this.failExportsOf.has(snap.sandboxId)) throw new ForkdError('UNAVAILABLE', `the blob store refused ${snapId}`);
        this.#blobs.set(`snapshots/${snapId}/manifest.json`, snap);
        return { manifest: `snapshots/${snapId}/manifest.json`, bytesUploaded: 1 };
      },
      importSnapshot: async (manifest, opts: ImportSnapshotOptions = {}) => {
        const snap = this.#blobs.get(manifest);
        if (!snap) throw new ForkdError('NOT_FOUND', `no manifest ${manifest}`);
        if (opts.asSandbox) {
          if (this.sandboxes.has(snap.sandboxId)) throw new ForkdError('ALREADY_EXISTS', `sandbox ${snap.sandboxId} exists`);
          this.add(snap.sandboxId, 'paused', [snap]);
          return snap;
        }
        const s = this.#of(snap.sandboxId);
        if (s.timeline.some((x) => x.id === snap.id)) throw new ForkdError('ALREADY_EXISTS', `snapshot ${snap.id} exists`);
        s.timeline.push(snap);
        return snap;
      },
    };
    const refuse = (code: 'UNAVAILABLE' | 'NOT_IMPLEMENTED', k: string) => async () => Promise.reject(new ForkdError(code, `fake node: ${k}`));
    return new Proxy(impl as NodeService, {
      get: (t, k) => (this.failing.has(String(k)) ? refuse('UNAVAILABLE', String(k)) : k in t ? t[k as keyof NodeService] : refuse('NOT_IMPLEMENTED', String(k))),
    });
  }
}
