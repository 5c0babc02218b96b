import type { NetworkRules, SandboxRecovery } from '@forkd/protocol';
import type { SandboxLoss, SandboxOrigin, SandboxPolicy, SandboxRecord, SnapshotRecord, Store, TemplateRecord } from './store.js';

/** Told the id of a sandbox whose record or snapshots were written (after the write committed). */
export type SandboxChangeListener = (sandboxId: string) => void;

/** What admission and the id-range picker read of every sandbox (see ObservedStore.summaries). */
export interface SandboxSummary {
  readonly id: string;
  readonly state: SandboxRecord['state'];
  readonly limits: SandboxRecord['limits'];
  readonly idmap?: number | undefined;
}

function summaryOf(r: SandboxRecord): SandboxSummary {
  return { id: r.id, state: r.state, limits: { ...r.limits }, idmap: r.idmap };
}

/**
 * A Store that says which sandbox each committed write concerned: what the
 * node's policy follows instead of re-reading every sandbox on a timer
 * (see PolicyScheduler). Every write goes through the store, so no change
 * is missed; reads pass straight through. It also keeps, in memory, the few
 * fields every create reads of all sandboxes (state, limits, id range): with
 * 10,000 sandboxes a full listing costs ~100 ms of CPU, and admission and
 * the id-range picker read one per create. The summary is updated before a
 * write resolves, so whoever awaited the write finds it in `summaries`.
 */
export class ObservedStore implements Store {
  readonly #s: Store;
  readonly #listeners = new Set<SandboxChangeListener>();
  #index: Map<string, SandboxSummary> | undefined;

  constructor(inner: Store) {
    this.#s = inner;
  }

  /** state, limits and id range of every sandbox, from memory after the first call (one listing). */
  async summaries(): Promise<SandboxSummary[]> {
    if (!this.#index) {
      const all = await this.#s.listSandboxes();
      // A write that resolved meanwhile updated an index that was not there yet: take the listing only if none came.
      this.#index ??= new Map(all.map((r) => [r.id, summaryOf(r)]));
    }
    return [...this.#index.values()];
  }

  /** Updates the summary of one sandbox if the index exists (re-read from the store). */
  async #resummarize(id: string): Promise<void> {
    if (!this.#index) return;
    const r = await this.#s.getSandbox(id);
    if (r) this.#index.set(id, summaryOf(r));
    else this.#index.delete(id);
  }

  /** Returns the unsubscribe. A listener that throws is not this store's concern: it is caught. */
  onSandboxChange(listener: SandboxChangeListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  async #wrote<T>(id: string | undefined, p: Promise<T>): Promise<T> {
    const v = await p;
    if (id !== undefined) {
      for (const l of this.#listeners) {
        try {
          l(id);
        } catch {
          // A listener's failure must not fail a write that committed.
        }
      }
    }
    return v;
  }

  async insertSandbox(rec: SandboxRecord): Promise<void> {
    await this.#s.insertSandbox(rec);
    this.#index?.set(rec.id, summaryOf(rec));
    return this.#wrote(rec.id, Promise.resolve());
  }
  async transition(id: string, from: SandboxRecord['state'], to: SandboxRecord['state'], error?: string): Promise<boolean> {
    const done = await this.#s.transition(id, from, to, error);
    await this.#resummarize(id);
    return this.#wrote(id, Promise.resolve(done));
  }
  getSandbox(id: string): Promise<SandboxRecord | undefined> {
    return this.#s.getSandbox(id);
  }
  listSandboxes(): Promise<SandboxRecord[]> {
    return this.#s.listSandboxes();
  }
  async deleteSandbox(id: string): Promise<void> {
    await this.#s.deleteSandbox(id);
    this.#index?.delete(id);
    return this.#wrote(id, Promise.resolve());
  }
  setResumeFrom(id: string, snapshotId: string | undefined): Promise<void> {
    return this.#wrote(id, this.#s.setResumeFrom(id, snapshotId));
  }
  setInstance(id: string, instance: string, origin?: SandboxOrigin): Promise<void> {
    return this.#wrote(id, this.#s.setInstance(id, instance, origin));
  }
  setOrigin(id: string, origin: SandboxOrigin | undefined): Promise<void> {
    return this.#wrote(id, this.#s.setOrigin(id, origin));
  }
  async setIdmap(id: string, hostId: number | undefined): Promise<void> {
    await this.#s.setIdmap(id, hostId);
    await this.#resummarize(id);
  }
  setNetwork(id: string, network: NetworkRules | undefined): Promise<void> {
    return this.#s.setNetwork(id, network);
  }
  setLost(id: string, lost: SandboxLoss | undefined): Promise<void> {
    return this.#wrote(id, this.#s.setLost(id, lost));
  }
  setRecovered(id: string, recovered: SandboxRecovery | undefined): Promise<void> {
    return this.#wrote(id, this.#s.setRecovered(id, recovered));
  }
  setPolicy(id: string, policy: SandboxPolicy | undefined): Promise<void> {
    return this.#wrote(id, this.#s.setPolicy(id, policy));
  }
  insertSnapshot(rec: SnapshotRecord): Promise<void> {
    return this.#wrote(rec.sandboxId, this.#s.insertSnapshot(rec));
  }
  getSnapshot(id: string): Promise<SnapshotRecord | undefined> {
    return this.#s.getSnapshot(id);
  }
  listSnapshots(sandboxId: string): Promise<SnapshotRecord[]> {
    return this.#s.listSnapshots(sandboxId);
  }
  lastSnapshot(sandboxId: string): Promise<SnapshotRecord | undefined> {
    return this.#s.lastSnapshot(sandboxId);
  }
  snapshotTotals(): Promise<{ count: number; bytes: number }> {
    return this.#s.snapshotTotals();
  }
  async deleteSnapshot(id: string): Promise<void> {
    const owner = (await this.#s.getSnapshot(id))?.sandboxId;
    return this.#wrote(owner, this.#s.deleteSnapshot(id));
  }
  async setPinned(id: string, pinned: boolean): Promise<void> {
    const owner = (await this.#s.getSnapshot(id))?.sandboxId;
    return this.#wrote(owner, this.#s.setPinned(id, pinned));
  }
  setSnapshotSize(id: string, bytes: number): Promise<void> {
    return this.#s.setSnapshotSize(id, bytes);
  }
  listForks(snapshotId: string): Promise<SandboxRecord[]> {
    return this.#s.listForks(snapshotId);
  }
  upsertTemplate(rec: TemplateRecord): Promise<void> {
    return this.#s.upsertTemplate(rec);
  }
  getTemplate(name: string): Promise<TemplateRecord | undefined> {
    return this.#s.getTemplate(name);
  }
  listTemplates(): Promise<TemplateRecord[]> {
    return this.#s.listTemplates();
  }
  deleteTemplate(name: string): Promise<void> {
    return this.#s.deleteTemplate(name);
  }
  close(): Promise<void> {
    return this.#s.close();
  }
}
