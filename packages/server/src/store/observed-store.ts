import type { NetworkRules, SandboxRecovery } from '@forkd/protocol';
import type { SandboxLoss, SandboxOrigin, SandboxPolicy, SandboxRecord, SnapshotRecord, Store, TemplateRecord } from './store.js';

/** Told the id of a sandbox whose record or snapshots were written (after the write committed). */
export type SandboxChangeListener = (sandboxId: string) => void;

/**
 * A Store that says which sandbox each committed write concerned: what the
 * node's policy follows instead of re-reading every sandbox on a timer
 * (see PolicyScheduler). Every write goes through the store, so no change
 * is missed; reads pass straight through.
 */
export class ObservedStore implements Store {
  readonly #s: Store;
  readonly #listeners = new Set<SandboxChangeListener>();

  constructor(inner: Store) {
    this.#s = inner;
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

  insertSandbox(rec: SandboxRecord): Promise<void> {
    return this.#wrote(rec.id, this.#s.insertSandbox(rec));
  }
  transition(id: string, from: SandboxRecord['state'], to: SandboxRecord['state'], error?: string): Promise<boolean> {
    return this.#wrote(id, this.#s.transition(id, from, to, error));
  }
  getSandbox(id: string): Promise<SandboxRecord | undefined> {
    return this.#s.getSandbox(id);
  }
  listSandboxes(): Promise<SandboxRecord[]> {
    return this.#s.listSandboxes();
  }
  deleteSandbox(id: string): Promise<void> {
    return this.#wrote(id, this.#s.deleteSandbox(id));
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
  setIdmap(id: string, hostId: number | undefined): Promise<void> {
    return this.#s.setIdmap(id, hostId);
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
