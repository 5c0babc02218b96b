import { ForkdError, type SandboxInfo, type SnapshotInfo } from '@forkd/protocol';
import type { NodeService } from '../node-contract/node-service.js';
import type { ImportSnapshotOptions, SnapshotExport } from '../node-contract/node-types.js';
import { sandboxInfo } from './sandbox-info.js';

/** Where fake nodes' exports go: manifest key → the snapshot it carries. */
export type FakeBlobs = Map<string, SnapshotInfo>;

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
  readonly #blobs: FakeBlobs;

  constructor(blobs: FakeBlobs) {
    this.#blobs = blobs;
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

  get service(): NodeService {
    const impl: Partial<NodeService> = {
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
