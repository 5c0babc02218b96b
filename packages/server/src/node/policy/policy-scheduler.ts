import type { Logger } from '../../shared/logger.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import type { ExitWatch } from '../runtime/runtime.js';
import { activityMakesDue, MIN_RELOOK_MS, nextLookAt, type PlanFacts } from './policy-plan.js';
import { effectivePolicy, PASS_CONCURRENCY, type PolicyDefaults } from './reconciler.js';
import { REAL_CLOCK, SandboxTimers, type TimerClock } from './sandbox-timers.js';
import { nextThinAt } from './timeline-policy.js';

/** What the scheduler reads of the node (public methods of the SandboxManager). */
export interface SchedulerHost {
  readonly logger: Logger;
  records(): Promise<SandboxRecord[]>;
  recordOf(id: string): Promise<SandboxRecord | undefined>;
  snapshotRecords(id: string): Promise<SnapshotRecord[]>;
  lastActive(id: string): number | undefined;
  /** The runtime's exit watch of an instance (see Runtime.watchExit). */
  watchExit(key: string, onExit: () => void): ExitWatch;
}

/** The events it follows instead of polling. Each returns its unsubscribe. */
export interface PolicyEvents {
  /** A sandbox's record or snapshots were written (ObservedStore). */
  onSandboxChange(listener: (id: string) => void): () => void;
  /** An API call or stream used a sandbox (SandboxManager.markActive). */
  onActive(listener: (id: string) => void): () => void;
}

/** What the scheduler has the policy do: the Reconciler's per-sandbox look. */
export interface PolicyLooker {
  /** `announced`: the runtime said its processes ended (an exit watch), so `liveness` is looked at even if a task is not yet reaped. */
  lookAt(id: string, now: number, liveness: boolean, announced?: boolean): Promise<void>;
  forget(id: string): void;
}

export interface SchedulerOptions {
  clock?: TimerClock;
  /** Safety net: how often the list of sandboxes is read to plan any the events missed (one store read, no per-sandbox work). */
  resyncMs?: number;
}

/** Default RESYNC: a store listing every 10 minutes costs ~nothing per sandbox. */
export const RESYNC_MS = 10 * 60_000;

/**
 * Drives the policy per sandbox instead of a pass over all of them: each
 * running or paused sandbox has one timer, armed at the next instant its
 * policy can have something to do (nextLookAt), and events re-plan it (a
 * store write about it, an API call that makes an overdue snapshot due, the
 * runtime's notice that its processes died). An idle sandbox therefore
 * costs one pending timer and one exit watch, and is looked at only when
 * its lifetime ends, its snapshot interval passes (CPU use read once) or its
 * idle deadline comes. Looks run a few at a time (PASS_CONCURRENCY), never
 * two on one sandbox at once.
 */
export class PolicyScheduler {
  readonly #host: SchedulerHost;
  readonly #looker: PolicyLooker;
  readonly #events: PolicyEvents;
  readonly #defaults: PolicyDefaults;
  readonly #clock: TimerClock;
  readonly #resyncMs: number;
  readonly #timers: SandboxTimers;
  readonly #facts = new Map<string, PlanFacts>();
  readonly #looked = new Map<string, number>();
  readonly #seen = new Map<string, number>();
  readonly #watches = new Map<string, { key: string; watch: ExitWatch | undefined }>();
  readonly #dirty = new Set<string>();
  readonly #queue: string[] = [];
  /** Queued for a look; true: its exit watch fired. */
  readonly #queued = new Map<string, boolean>();
  readonly #busy = new Set<string>();
  readonly #unsubscribe: Array<() => void> = [];
  #planning: Promise<void> | undefined;
  #workers = 0;
  #resync: unknown;
  #stopped = false;

  constructor(host: SchedulerHost, looker: PolicyLooker, events: PolicyEvents, defaults: PolicyDefaults = {}, opts: SchedulerOptions = {}) {
    this.#host = host;
    this.#looker = looker;
    this.#events = events;
    this.#defaults = defaults;
    this.#clock = opts.clock ?? REAL_CLOCK;
    this.#resyncMs = opts.resyncMs ?? RESYNC_MS;
    this.#timers = new SandboxTimers((id) => this.#enqueue(id, false), this.#clock);
  }

  /** Plans every sandbox once, then follows events. */
  async start(): Promise<void> {
    this.#unsubscribe.push(this.#events.onSandboxChange((id) => this.#markDirty(id)));
    this.#unsubscribe.push(this.#events.onActive((id) => this.#active(id)));
    await this.resync();
    const again = () => {
      if (this.#stopped) return;
      void this.resync().finally(() => (this.#resync = this.#clock.setTimeout(again, this.#resyncMs)));
    };
    this.#resync = this.#clock.setTimeout(again, this.#resyncMs);
  }

  /** Stops timers, watches and subscriptions; looks under way finish on their own. */
  stop(): void {
    this.#stopped = true;
    for (const u of this.#unsubscribe.splice(0)) u();
    if (this.#resync !== undefined) this.#clock.clearTimeout(this.#resync);
    this.#timers.clear();
    for (const w of this.#watches.values()) w.watch?.stop();
    this.#watches.clear();
    this.#queue.length = 0;
    this.#queued.clear();
  }

  /** Plans sandboxes the scheduler does not follow yet and forgets those gone (one store listing). */
  async resync(): Promise<void> {
    const records = await this.#host.records();
    const ids = new Set(records.map((r) => r.id));
    for (const id of this.#facts.keys()) if (!ids.has(id)) this.#markDirty(id);
    for (const r of records) if (!this.#facts.has(r.id) && (r.state === 'running' || r.state === 'paused')) this.#markDirty(r.id);
    await this.settled();
  }

  /** When its next look is armed (tests, diagnostics). */
  dueAt(id: string): number | undefined {
    return this.#timers.dueAt(id);
  }

  /** Whether its death is announced by the runtime, whatever the cause. */
  watched(id: string): boolean {
    return this.#watches.get(id)?.watch?.everyExit === true;
  }

  /** Sandboxes with a look armed. */
  get armed(): number {
    return this.#timers.size;
  }

  /** Resolves once no plan or look is pending (tests, benchmarks). */
  async settled(): Promise<void> {
    while (this.#planning || this.#workers > 0) {
      await this.#planning;
      if (this.#workers > 0) await new Promise((r) => setTimeout(r, 5));
    }
  }

  #markDirty(id: string): void {
    if (this.#stopped) return;
    this.#dirty.add(id);
    this.#planning ??= (async () => {
      // Writes come in bursts (a snapshot is several): one plan per sandbox per burst.
      await new Promise((r) => setImmediate(r));
      try {
        for (let next = this.#take(); next !== undefined; next = this.#take()) {
          await this.#plan(next).catch((err: unknown) => this.#host.logger.warn('policy planning failed', { sandbox: next, error: String(err) }));
        }
      } finally {
        this.#planning = undefined;
      }
    })();
  }

  #take(): string | undefined {
    const [id] = this.#dirty;
    if (id !== undefined) this.#dirty.delete(id);
    return id;
  }

  async #plan(id: string): Promise<void> {
    if (this.#stopped) return;
    const r = await this.#host.recordOf(id);
    if (!r || (r.state !== 'running' && r.state !== 'paused')) return this.#drop(id, !r);
    const snaps = await this.#host.snapshotRecords(id);
    const { timeline, idleMs } = effectivePolicy(r, this.#defaults);
    const now = this.#clock.now();
    const entries = snaps.map((s) => ({ id: s.id, createdAt: Date.parse(s.createdAt), pinned: s.pinned || s.id === r.resumeFrom || s.id === r.origin?.snapshot }));
    this.#watch(r);
    const f: PlanFacts = {
      state: r.state,
      expiresAt: r.policy?.expiresAt ? Date.parse(r.policy.expiresAt) : Number.NaN,
      timeline,
      idleMs,
      lastSnapshotAt: snaps.length ? Date.parse(snaps[snaps.length - 1]!.createdAt) : Date.parse(r.createdAt),
      lastActiveAt: this.#host.lastActive(id),
      thinAt: nextThinAt(timeline, now, entries),
      lookedAt: this.#looked.get(id) ?? Number.NEGATIVE_INFINITY,
      exitWatched: this.watched(id),
      seenAt: this.#seen.get(id) ?? now,
    };
    if (!this.#seen.has(id)) this.#seen.set(id, now);
    this.#facts.set(id, f);
    const at = nextLookAt(f);
    if (at === undefined) this.#timers.cancel(id);
    else if (!this.#queued.has(id)) this.#timers.arm(id, at);
  }

  /** Not running or paused, or gone: no timer, no watch; `gone` forgets it entirely. */
  #drop(id: string, gone: boolean): void {
    this.#timers.cancel(id);
    this.#facts.delete(id);
    this.#unwatch(id);
    if (gone) {
      this.#looked.delete(id);
      this.#seen.delete(id);
      this.#looker.forget(id);
    }
  }

  /** A running sandbox's current instance is watched for its death; any other watch goes. */
  #watch(r: SandboxRecord): void {
    const key = r.instance ?? r.id;
    const cur = this.#watches.get(r.id);
    if (r.state !== 'running') return this.#unwatch(r.id);
    if (cur?.key === key) return;
    cur?.watch?.stop();
    const w: { key: string; watch: ExitWatch | undefined } = { key, watch: undefined };
    this.#watches.set(r.id, w);
    w.watch = this.#host.watchExit(key, () => {
      if (this.#watches.get(r.id) !== w) return;
      // Fired once: the next plan watches again whatever instance it then runs.
      this.#watches.delete(r.id);
      this.#enqueue(r.id, true);
    });
  }

  #unwatch(id: string): void {
    this.#watches.get(id)?.watch?.stop();
    this.#watches.delete(id);
  }

  /** An API call: an overdue rolling snapshot waiting for activity is looked at soon (not at once: the call is still running). */
  #active(id: string): void {
    const f = this.#facts.get(id);
    if (!f) return;
    const now = this.#clock.now();
    if (!activityMakesDue(f, now)) return;
    const soon = Math.max(now, f.lookedAt + MIN_RELOOK_MS);
    const armed = this.#timers.dueAt(id);
    if (armed !== undefined && armed > soon) this.#timers.arm(id, soon);
  }

  #enqueue(id: string, announced: boolean): void {
    if (this.#stopped) return;
    this.#timers.cancel(id);
    const had = this.#queued.get(id);
    if (had === undefined) this.#queue.push(id);
    this.#queued.set(id, had === true || announced);
    this.#pump();
  }

  #pump(): void {
    while (this.#workers < PASS_CONCURRENCY) {
      const i = this.#queue.findIndex((id) => !this.#busy.has(id));
      if (i < 0) return;
      const [id] = this.#queue.splice(i, 1) as [string];
      const announced = this.#queued.get(id) === true;
      const liveness = announced || !this.watched(id);
      this.#queued.delete(id);
      this.#workers++;
      this.#busy.add(id);
      void this.#look(id, liveness, announced).finally(() => {
        this.#workers--;
        this.#busy.delete(id);
        this.#pump();
      });
    }
  }

  async #look(id: string, liveness: boolean, announced: boolean): Promise<void> {
    const now = this.#clock.now();
    this.#looked.set(id, now);
    try {
      await this.#looker.lookAt(id, now, liveness, announced);
    } catch (err) {
      this.#host.logger.warn('policy look failed', { sandbox: id, error: String(err) });
    }
    // Whatever it did (or did not) changes when it is next due: planned again.
    this.#markDirty(id);
  }
}
