import type { SandboxState } from '@forkd/protocol';
import type { TimelinePolicy } from './timeline-policy.js';

/**
 * The shortest gap between two looks at one sandbox (the old pass's period):
 * an action that failed (a pause, a timeout) is tried again after it, not in
 * a loop.
 */
export const MIN_RELOOK_MS = 15_000;

/** How often a sandbox whose death the runtime cannot announce (see Runtime.watchExit) is looked at for it. */
export const LIVENESS_LOOK_MS = 60_000;

/** What the policy knows of one sandbox when it plans its next look. Times in ms since the epoch. */
export interface PlanFacts {
  state: SandboxState;
  /** End of its lifetime (NaN: none). */
  expiresAt: number;
  timeline: TimelinePolicy;
  /** Idle time before hibernation (0: never). */
  idleMs: number;
  /** Its latest snapshot, or when it was made. */
  lastSnapshotAt: number;
  /** Its last recorded activity (undefined: none yet, the next look records one). */
  lastActiveAt: number | undefined;
  /** When thinning its timeline may next drop something (nextThinAt). */
  thinAt: number | undefined;
  /** When the policy last looked at it (-Infinity: never). */
  lookedAt: number;
  /** The runtime announces its death: no look is needed to notice it. */
  exitWatched: boolean;
  /** When the scheduler first planned it: a running sandbox never looked at is looked at MIN_RELOOK_MS after, for its CPU baseline. */
  seenAt: number;
}

/**
 * When the policy should next look at a sandbox, or undefined if nothing can
 * become due without an event (a state change, a new snapshot, a new
 * lifetime): the earliest of its lifetime's end, its next rolling snapshot,
 * its idle deadline, its timeline's next thinning, (unwatched) a liveness
 * look, and a first look soon after it is seen (its CPU baseline). A rolling snapshot needs activity since the last one: when its time
 * has passed without any (the last look found it idle), CPU use is looked at
 * again an interval later; an API call brings that forward (see
 * PolicyScheduler). Something due at or before the last look (an action that
 * failed) waits MIN_RELOOK_MS.
 */
export function nextLookAt(f: PlanFacts): number | undefined {
  const at: number[] = [];
  const live = f.state === 'running' || f.state === 'paused';
  if (!live) return undefined;
  if (Number.isFinite(f.expiresAt)) at.push(f.expiresAt);
  if (f.thinAt !== undefined) at.push(f.thinAt);
  if (f.state === 'running') {
    const interval = f.timeline.intervalMs;
    if (interval > 0) {
      const due = f.lastSnapshotAt + interval;
      at.push(due > f.lookedAt ? due : f.lookedAt + interval);
    }
    if (f.idleMs > 0) at.push(f.lastActiveAt === undefined ? f.lookedAt : f.lastActiveAt + f.idleMs);
    if (!f.exitWatched) at.push(f.lookedAt + LIVENESS_LOOK_MS);
    // CPU activity is CPU used since the last look: without a first one, a sandbox busy with no API call would look idle at its deadline.
    if (f.lookedAt === Number.NEGATIVE_INFINITY) at.push(f.seenAt + MIN_RELOOK_MS);
  }
  if (at.length === 0) return undefined;
  const next = Math.min(...at);
  return next <= f.lookedAt ? f.lookedAt + MIN_RELOOK_MS : next;
}

/**
 * Whether an API call should bring the next look forward: a running
 * sandbox whose rolling snapshot is overdue, waiting only for activity.
 */
export function activityMakesDue(f: PlanFacts, now: number): boolean {
  return f.state === 'running' && f.timeline.intervalMs > 0 && f.lastSnapshotAt + f.timeline.intervalMs <= now;
}
