import { existsSync } from 'node:fs';
import type { Logger } from '../../shared/logger.js';
import type { DiskQuotas } from '../storage/disk-quota.js';
import { checkPoolFree, readPoolSpace, type PoolFreePolicy, type PoolSpace } from '../storage/pool-space.js';
import { checkDiskAdmission, committedDiskMb } from './disk-admission.js';

const MB = 2 ** 20;
/** Room above the quota while a root starts (see limitForStart). */
export const HEADROOM_MB = 64;
/** Templates are read-only, but a name can be rebuilt: their size is remembered this long. */
const TEMPLATE_BYTES_TTL_MS = 60_000;

export interface SandboxDiskOptions {
  /** The pool's mount point (statfs); undefined: the free-space watch and disk admission are off. */
  pool?: string | undefined;
  /** Quota of a sandbox that asks for none, MiB. */
  defaultDiskMb: number;
  free: PoolFreePolicy;
  /** Sum of quotas ≤ this × the pool's size (0: not checked). */
  overcommit: number;
  /** Undefined: quotas off; the free-space watch still works. */
  quotas?: DiskQuotas | undefined;
}

export interface DiskQuotaUsage {
  usedBytes: number;
  limitBytes: number;
}

/**
 * A sandbox's disk, as the manager sees it: the quota of its root volume
 * (set whenever a root is made: create, fork, resume, rewind, recovery),
 * the pool's free-space watch and disk admission. With simple quotas the
 * limit is on the sandbox's lineage group (what its roots wrote that is
 * still stored), with full qgroups on what the root references offset by
 * its template's bytes (disk-quota.ts); either way every new root of the
 * same sandbox gets the same limit.
 */
export class SandboxDisk {
  readonly #opts: SandboxDiskOptions;
  readonly #logger: Logger;
  /** Exact limits of roots being started (see limitForStart). */
  readonly #pending = new Map<string, { qgroup: string; exact: number }>();
  readonly #templates = new Map<string, { at: number; bytes: number }>();
  readonly #settling = new Map<string, Promise<void>>();
  /** Simple quotas: the lineage group of each root started here, until a restore replaces it (see lineage). */
  readonly #lineages = new Map<string, string>();

  constructor(opts: SandboxDiskOptions, logger: Logger) {
    this.#opts = opts;
    this.#logger = logger;
  }

  get defaultDiskMb(): number {
    return this.#opts.defaultDiskMb;
  }

  diskMbOf(limits: { diskMb?: number | undefined }): number {
    return limits.diskMb ?? this.#opts.defaultDiskMb;
  }

  /** The pool's free-space watch: RESOURCE_EXHAUSTED below the threshold. Resolves with the space read (for admit). */
  checkFree(what: string): PoolSpace {
    if (!this.#opts.pool) return { sizeBytes: 0, freeBytes: 0 };
    const space = readPoolSpace(this.#opts.pool);
    checkPoolFree(space, this.#opts.free, what);
    return space;
  }

  /** Synchronous, so a caller that records the sandbox right after cannot race another admission. */
  admit(space: PoolSpace, demandMb: number, records: Iterable<{ limits: { diskMb?: number | undefined } }>): void {
    checkDiskAdmission(committedDiskMb(records, this.#opts.defaultDiskMb), demandMb, space.sizeBytes, this.#opts.overcommit);
  }

  /** Limits a running root (made from `templateVolume`) to its quota (see #exact). */
  async apply(root: string, templateVolume: string | undefined, diskMb: number | undefined): Promise<void> {
    const q = this.#opts.quotas;
    if (!q) return;
    const exact = await this.#exact(templateVolume, diskMb);
    // Simple quotas: headroom 0 sets the exact limit, on the lineage group (made if the root has none: a pool switched from full qgroups).
    if (q.mode === 'simple') return void (await q.limitForStart(root, exact, 0));
    const u = await q.usage(root);
    if (u) await q.setLimit(u.qgroup, exact);
  }

  /**
   * Simple quotas: the lineage group of the first of `roots` that has one
   * (the root a restore replaces; for a rewind, the instance left), read
   * before that root is removed so the new one joins it (see DiskQuotas).
   */
  async lineage(roots: string[]): Promise<string | undefined> {
    const q = this.#opts.quotas;
    if (q?.mode !== 'simple') return undefined;
    for (const root of new Set(roots)) {
      // Known from its start (no process); a root that does not exist (a fork's) has none.
      const known = this.#lineages.get(root);
      this.#lineages.delete(root);
      const g = known ?? (existsSync(root) ? await q.lineageOf(root) : undefined);
      if (g) return g;
    }
    return undefined;
  }

  /** A root removed for good (its sandbox deleted, a rewind's instance left). */
  forget(root: string): void {
    this.#lineages.delete(root);
  }

  /**
   * Called on a new root before forkd writes into it (its agent, /dev) and
   * starts or restores it (a new root copies the limit of the volume it was
   * made from). Until the agent answers, the limit is HEADROOM_MB above the
   * quota, or above what the root already holds if that is more (a copy of
   * a full sandbox), so forkd's writes, CRIU's and the agent's socket always
   * fit: a sandbox that filled its quota can still be resumed, forked and
   * rewound. settle() then sets the exact limit; what the sandbox writes
   * meanwhile is bounded by the headroom.
   */
  async limitForStart(root: string, templateVolume: string | undefined, diskMb: number | undefined, lineage?: string): Promise<void> {
    const q = this.#opts.quotas;
    if (!q) return;
    // A settle of an earlier start of this root (or of the root it replaces, in the same lineage group) must not land after this one's headroom.
    await this.#settling.get(root);
    if (lineage) await this.#settling.get(lineage);
    const exact = await this.#exact(templateVolume, diskMb);
    const got = await q.limitForStart(root, exact, HEADROOM_MB * MB, lineage);
    if (!got) return;
    this.#pending.set(root, { qgroup: got.qgroup, exact });
    if (q.mode === 'simple') this.#lineages.set(root, got.qgroup);
  }

  /**
   * The exact limit once the agent answers (see limitForStart): in the
   * background, so no create, fork or resume waits for it; what the
   * sandbox writes meanwhile is still bounded by the headroom.
   */
  settle(root: string): void {
    const p = this.#pending.get(root);
    const q = this.#opts.quotas;
    if (!p || !q) return;
    this.#pending.delete(root);
    const done = q
      .setLimit(p.qgroup, p.exact)
      .catch((err: unknown) => this.#logger.warn('could not set the exact disk quota', { root, error: String(err) }))
      .finally(() => {
        for (const key of [root, p.qgroup]) if (this.#settling.get(key) === done) this.#settling.delete(key);
      });
    // Keyed by the qgroup too: with simple quotas the next root of the sandbox shares it (see limitForStart).
    this.#settling.set(root, done);
    this.#settling.set(p.qgroup, done);
  }

  /** Waits for every exact limit being set (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all(this.#settling.values());
  }

  async usage(root: string, templateVolume: string | undefined, diskMb: number | undefined): Promise<DiskQuotaUsage | undefined> {
    const q = this.#opts.quotas;
    const u = await q?.usage(root);
    if (!q || !u) return undefined;
    const base = q.mode === 'simple' ? 0 : await this.#templateBytes(templateVolume);
    return { usedBytes: Math.max(0, u.referencedBytes - base), limitBytes: this.diskMbOf({ diskMb }) * MB };
  }

  /**
   * The limit of a root: its quota; with full qgroups, which count what the
   * root references, plus its template's bytes (see DiskQuotas).
   */
  async #exact(templateVolume: string | undefined, diskMb: number | undefined): Promise<number> {
    const quota = this.diskMbOf({ diskMb }) * MB;
    return this.#opts.quotas?.mode === 'simple' ? quota : (await this.#templateBytes(templateVolume)) + quota;
  }

  /**
   * A template is a read-only volume: its qgroup's referenced bytes do not
   * change while it exists. One that is gone (deleted after its sandboxes
   * were made; undefined) counts 0: its bytes then count against the
   * sandbox's quota.
   */
  async #templateBytes(templateVolume: string | undefined): Promise<number> {
    if (templateVolume === undefined) return 0;
    const known = this.#templates.get(templateVolume);
    if (known && Date.now() - known.at < TEMPLATE_BYTES_TTL_MS) return known.bytes;
    const u = await this.#opts.quotas?.usage(templateVolume);
    if (!u) this.#logger.warn('no qgroup for template volume: its bytes count against the quota', { volume: templateVolume });
    const bytes = u?.referencedBytes ?? 0;
    this.#templates.set(templateVolume, { at: Date.now(), bytes });
    return bytes;
  }
}
