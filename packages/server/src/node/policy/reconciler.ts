import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import { DEFAULT_TIMELINE_POLICY, snapshotDue, snapshotsToThin, type TimelinePolicy } from './timeline-policy.js';
import { eachBounded } from '../manager/each-bounded.js';

/** Sandboxes worked on at once in a pass (each may dump memory: CPU and disk bound). */
export const PASS_CONCURRENCY = 4;

/** What the pass needs of the node: public methods of the SandboxManager. */
export interface ReconcilerHost {
  readonly logger: Logger;
  records(): Promise<SandboxRecord[]>;
  recordOf(id: string): Promise<SandboxRecord | undefined>;
  snapshotRecords(id: string): Promise<SnapshotRecord[]>;
  usage(id: string): Promise<{ cpuNanos: number }>;
  markActive(id: string, at?: number): void;
  lastActive(id: string): number | undefined;
  openConnections(id: string): Promise<number>;
  timeOut(id: string): Promise<void>;
  reviveIfDead(id: string, announced?: boolean): Promise<boolean>;
  /** A pause that gives the memory back at once (no hot window). */
  hibernate(id: string): Promise<unknown>;
  policySnapshot(id: string): Promise<void>;
  deleteSnapshot(snapId: string): Promise<void>;
}

/** The server's defaults of the rolling timeline and of hibernation (a sandbox's policy may override them). */
export interface PolicyDefaults {
  timeline?: TimelinePolicy | undefined;
  /** Idle time before hibernation, ms (0 = never). */
  idleTimeoutMs?: number | undefined;
}

/** Effective policy: the sandbox's overrides over the server's defaults. */
export function effectivePolicy(r: SandboxRecord, defaults: PolicyDefaults): { timeline: TimelinePolicy; idleMs: number } {
  const base = defaults.timeline ?? DEFAULT_TIMELINE_POLICY;
  const interval = r.policy?.snapshotIntervalSeconds;
  const idle = r.policy?.idleTimeoutSeconds;
  return {
    timeline: interval === undefined ? base : { ...base, intervalMs: interval * 1000 },
    idleMs: idle === undefined ? (defaults.idleTimeoutMs ?? 0) : idle * 1000,
  };
}

/**
 * The policy's decisions for a sandbox: lifetimes that ran out, processes
 * that died (brought back, see Recovery), rolling snapshots of active ones,
 * hibernation of idle ones, thinning of every timeline. Activity = an API
 * call (recorded by the manager), an open stream, or CPU use above 2% of a
 * core since the previous look. A serving node looks at each sandbox when
 * its PolicyScheduler says (timers and events); `tick` is a pass over all of
 * them at a given time (tests).
 */
export class Reconciler {
  readonly #m: ReconcilerHost;
  readonly #defaults: PolicyDefaults;
  readonly #cpu = new Map<string, { cpuNanos: number; at: number }>();
  #running = false;
  /** Sandboxes whose work from an earlier pass overran its timeout and still runs: skipped until it ends. */
  readonly #overrun = new Set<string>();
  readonly #timeoutMs: number;

  /**
   * `timeoutMs`: how long a pass waits for one sandbox before it goes on
   * without it. Its work is not cut (a lifecycle operation must end in a
   * consistent state: the guest link's deadlines end it, see
   * GUEST_DEADLINE_MS), only no longer waited for.
   */
  constructor(manager: ReconcilerHost, timeoutMs: number, defaults: PolicyDefaults = {}) {
    this.#m = manager;
    this.#defaults = defaults;
    this.#timeoutMs = timeoutMs;
  }

  /** Works on sandboxes a few at a time, each within the timeout: one stuck sandbox delays no other. */
  async tick(now = Date.now()): Promise<void> {
    if (this.#running) return;
    this.#running = true;
    try {
      await this.#bounded((await this.#m.records()).filter((r) => !this.#overrun.has(r.id)), now, true);
    } finally {
      this.#running = false;
    }
  }

  /**
   * One sandbox's decisions at `now` (its timer, or an event, see
   * PolicyScheduler), within the same timeout as in a pass; nothing while
   * earlier work on it still overruns. `liveness`: look whether its processes
   * died (not needed when the runtime announces that); `announced`: the
   * runtime said so (see SandboxManager.reviveIfDead).
   */
  async lookAt(id: string, now = Date.now(), liveness = true, announced = false): Promise<void> {
    if (this.#overrun.has(id)) return;
    const r = await this.#m.recordOf(id);
    if (!r) return this.forget(id);
    await this.#bounded([r], now, liveness, announced);
  }

  /** Whether work on it from an earlier look overran its timeout and still runs. */
  overrunning(id: string): boolean {
    return this.#overrun.has(id);
  }

  /** Drops what it remembers of a sandbox that is gone. */
  forget(id: string): void {
    this.#cpu.delete(id);
  }

  async #bounded(records: SandboxRecord[], now: number, liveness: boolean, announced = false): Promise<void> {
    const late = new Set<string>();
    await eachBounded(
      records,
      {
        concurrency: PASS_CONCURRENCY,
        timeoutMs: this.#timeoutMs,
        onTimeout: (r) => {
          late.add(r.id);
          this.#overrun.add(r.id);
          this.#m.logger.warn('policy tick gave up waiting for a sandbox; its work goes on', { sandbox: r.id, timeoutMs: this.#timeoutMs });
        },
        onError: (r, err) => this.#m.logger.warn('policy tick failed', { sandbox: r.id, error: (err as Error).message }),
        // Work that overran is let back into passes once it ends.
        onSettled: (r) => {
          if (late.has(r.id)) this.#overrun.delete(r.id);
        },
      },
      (r) => this.#one(r, now, liveness, announced),
    );
  }

  async #lastActivity(r: SandboxRecord, now: number): Promise<number> {
    const u = await this.#m.usage(r.id).catch(() => undefined);
    if (u) {
      const prev = this.#cpu.get(r.id);
      this.#cpu.set(r.id, { cpuNanos: u.cpuNanos, at: now });
      if (prev && now > prev.at && (u.cpuNanos - prev.cpuNanos) / ((now - prev.at) * 1e6) > 0.02) this.#m.markActive(r.id, now);
    }
    if ((await this.#m.openConnections(r.id)) > 0) this.#m.markActive(r.id, now);
    const last = this.#m.lastActive(r.id);
    if (last !== undefined) return last;
    this.#m.markActive(r.id, now);
    return now;
  }

  async #one(r: SandboxRecord, now: number, liveness: boolean, announced: boolean): Promise<void> {
    const expires = r.policy?.expiresAt ? Date.parse(r.policy.expiresAt) : Number.NaN;
    if ((r.state === 'running' || r.state === 'paused') && now >= expires) return this.#m.timeOut(r.id);
    const { timeline, idleMs } = effectivePolicy(r, this.#defaults);
    // Its processes died (init killed, e.g. by the OOM killer): it is brought back, nothing else this pass.
    if (r.state === 'running' && liveness && (await this.#m.reviveIfDead(r.id, announced))) return;
    if (r.state === 'running') {
      const last = await this.#lastActivity(r, now);
      if (idleMs > 0 && now - last >= idleMs) {
        this.#m.logger.info('hibernating idle sandbox', { sandbox: r.id, idleMs: now - last });
        await this.#m.hibernate(r.id);
      } else {
        const snaps = await this.#m.snapshotRecords(r.id);
        const lastSnap = snaps.length ? Date.parse(snaps[snaps.length - 1]!.createdAt) : Date.parse(r.createdAt);
        if (snapshotDue(timeline, now, lastSnap, last)) await this.#m.policySnapshot(r.id);
      }
    }
    const current = await this.#m.recordOf(r.id);
    if (!current || (current.state !== 'running' && current.state !== 'paused')) return;
    const entries = (await this.#m.snapshotRecords(r.id)).map((s) => ({ id: s.id, createdAt: Date.parse(s.createdAt), pinned: s.pinned || s.id === current.resumeFrom || s.id === current.origin?.snapshot }));
    for (const id of snapshotsToThin(timeline, now, entries)) await this.#m.deleteSnapshot(id);
  }
}
