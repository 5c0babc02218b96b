import { ForkdError } from '@forkd/protocol';
import type { SandboxSummary } from '../../store/observed-store.js';
import type { PoolSpace } from '../storage/pool-space.js';
import type { AdmissionTicket, Committed, NodeAdmission } from './admission.js';
import type { SandboxDisk } from './sandbox-disk.js';

/** What a create, fork or resume asks the node to hold for it. */
export interface AdmissionRequest {
  memory: Committed;
  /** Disk quota promised (create, fork); with the pool's space as read by SandboxDisk.checkFree. */
  disk?: { mb: number; space: PoolSpace } | undefined;
  /** The sandboxes the ticket stands for: their records are not counted twice while it is held. */
  ids: Iterable<string>;
}

/**
 * Memory and disk admission against the node's records. The store is async,
 * so "check, then insert the record in the same turn" no longer holds: two
 * creates could both read the records, both pass, then both insert. Instead
 * a passed check holds a ticket (counted by every later check) until the
 * caller has written its record and released it; and the read of the
 * records, the check and the hold run one admission at a time, with the
 * release queued behind them too, so a check never sees a ticket gone but
 * read records from before its sandbox was inserted.
 */
export class AdmissionGate {
  readonly #records: () => Promise<readonly SandboxSummary[]>;
  readonly #memory: NodeAdmission;
  readonly #disk: SandboxDisk;
  readonly #heldDisk = new Set<{ ids: ReadonlySet<string>; mb: number }>();
  readonly #reclaim: () => Promise<number>;
  #chain: Promise<unknown> = Promise.resolve();

  /** `reclaim` frees memory held by nothing a user waits on (hot pauses) and says how much it freed; asked once before a memory refusal. */
  constructor(records: () => Promise<readonly SandboxSummary[]>, memory: NodeAdmission, disk: SandboxDisk, reclaim: () => Promise<number> = async () => 0) {
    this.#records = records;
    this.#memory = memory;
    this.#disk = disk;
    this.#reclaim = reclaim;
  }

  /** An early refusal (before work that would be wasted, e.g. a live fork's snapshot); holds nothing. */
  async check(memory: Committed): Promise<void> {
    await this.#serial(() => this.#reclaiming(async () => this.#memory.check(memory, await this.#records())));
  }

  /** Checks and holds; release the ticket once the records it stands for are written (or the operation gave up). */
  admit(req: AdmissionRequest): Promise<AdmissionTicket> {
    return this.#serial(() => this.#reclaiming(() => this.#admit(req)));
  }

  /** Runs a check; refused for memory or CPUs with something to reclaim, reclaims and checks again. */
  async #reclaiming<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      const limit = err instanceof ForkdError && err.code === 'RESOURCE_EXHAUSTED' ? err.details?.limit : undefined;
      if ((limit !== 'FORKD_MEMORY_OVERCOMMIT' && limit !== 'FORKD_CPU_OVERCOMMIT') || (await this.#reclaim()) === 0) throw err;
      return fn();
    }
  }

  async #admit(req: AdmissionRequest): Promise<AdmissionTicket> {
    const records = await this.#records();
    const ids = new Set(req.ids);
    if (req.disk) {
      const skip = new Set([...this.#heldDisk].flatMap((h) => [...h.ids]));
      const counted = [...records.filter((r) => !skip.has(r.id)), ...[...this.#heldDisk].map((h) => ({ limits: { diskMb: h.mb } }))];
      this.#disk.admit(req.disk.space, req.disk.mb, counted);
    }
    const memory = this.#memory.admit(req.memory, ids, records);
    const disk = req.disk ? { ids, mb: req.disk.mb } : undefined;
    if (disk) this.#heldDisk.add(disk);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        void this.#serial(async () => {
          memory.release();
          if (disk) this.#heldDisk.delete(disk);
        });
      },
    };
  }

  /** What the node's memory admission allows and what is held against it now (a fleet's placement reads it). */
  async room(): Promise<{ memoryCapMb: number; committed: Committed; cpus: number; records: readonly SandboxSummary[] }> {
    const records = await this.#records();
    return { memoryCapMb: this.#memory.capMb, committed: this.#memory.committed(records), cpus: this.#memory.host.cpus, records };
  }

  #serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.#chain.then(fn, fn);
    this.#chain = next.catch(() => {});
    return next;
  }
}
