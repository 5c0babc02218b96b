/**
 * The rolling timeline: when to take a policy snapshot and which snapshots to
 * thin out. Pure functions over timestamps, so every rule is unit-tested.
 */
export interface TimelinePolicy {
  /** A snapshot this often while the sandbox is active (0 disables). */
  intervalMs: number;
  /** Everything younger than this is kept. */
  keepAllMs: number;
  /** Then one per hour up to this age. */
  hourlyMs: number;
  /** Then one per day up to this age; older ones go. */
  dailyMs: number;
}

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;

export const DEFAULT_TIMELINE_POLICY: TimelinePolicy = { intervalMs: 5 * MIN, keepAllMs: HOUR, hourlyMs: DAY, dailyMs: 7 * DAY };

export interface TimelineEntry {
  id: string;
  createdAt: number;
  /** Named snapshots and the state a paused sandbox resumes from are never thinned. */
  pinned: boolean;
}

/**
 * Whether a policy snapshot is due: the interval has passed since the last
 * snapshot (or since the sandbox started) and something happened since.
 */
export function snapshotDue(p: TimelinePolicy, now: number, lastSnapshotAt: number, lastActivityAt: number): boolean {
  if (p.intervalMs <= 0) return false;
  return now - lastSnapshotAt >= p.intervalMs && lastActivityAt > lastSnapshotAt;
}

/**
 * Ids to delete. Buckets are absolute (hour and day boundaries), and the
 * oldest snapshot of each bucket is the one kept, so a kept snapshot stays
 * kept as time passes: thinning never churns.
 */
export function snapshotsToThin(p: TimelinePolicy, now: number, entries: readonly TimelineEntry[]): string[] {
  const sorted = [...entries].sort((a, b) => a.createdAt - b.createdAt);
  const seenHours = new Set<number>();
  const seenDays = new Set<number>();
  const drop: string[] = [];
  for (const e of sorted) {
    const age = now - e.createdAt;
    if (e.pinned || age < p.keepAllMs) continue;
    if (age < p.hourlyMs) {
      const bucket = Math.floor(e.createdAt / HOUR);
      if (seenHours.has(bucket)) drop.push(e.id);
      else seenHours.add(bucket);
    } else if (age < p.dailyMs) {
      const bucket = Math.floor(e.createdAt / DAY);
      if (seenDays.has(bucket)) drop.push(e.id);
      else seenDays.add(bucket);
    } else {
      drop.push(e.id);
    }
  }
  return drop;
}

/**
 * The next instant `snapshotsToThin` may answer differently with no snapshot
 * added, pinned or deleted: when an unpinned snapshot's age crosses a
 * boundary (keep-all, hourly, daily). Undefined: never. Thinning is looked at
 * then, not every pass.
 */
export function nextThinAt(p: TimelinePolicy, now: number, entries: readonly TimelineEntry[]): number | undefined {
  let next = Number.POSITIVE_INFINITY;
  for (const e of entries) {
    if (e.pinned) continue;
    for (const age of [p.keepAllMs, p.hourlyMs, p.dailyMs]) {
      const at = e.createdAt + age;
      if (at > now && at < next) next = at;
    }
  }
  return Number.isFinite(next) ? next : undefined;
}
