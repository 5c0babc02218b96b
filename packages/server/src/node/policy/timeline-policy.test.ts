import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_TIMELINE_POLICY as P, nextThinAt, snapshotDue, snapshotsToThin, type TimelineEntry } from './timeline-policy.js';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DAY = 24 * HOUR;
const NOW = Date.UTC(2026, 10, 29, 12, 0, 0);

test('a policy snapshot is due after the interval, only if there was activity', () => {
  assert.equal(snapshotDue(P, NOW, NOW - 4 * MIN, NOW - 1000), false);
  assert.equal(snapshotDue(P, NOW, NOW - 5 * MIN, NOW - 1000), true);
  assert.equal(snapshotDue(P, NOW, NOW - 60 * MIN, NOW - 61 * MIN), false, 'idle since the last one');
  assert.equal(snapshotDue({ ...P, intervalMs: 0 }, NOW, NOW - DAY, NOW), false);
});

test('a week of 5-minute snapshots thins to hour, day and week resolution', () => {
  const entries: TimelineEntry[] = [];
  for (let t = NOW - 8 * DAY; t <= NOW; t += 5 * MIN) entries.push({ id: String(t), createdAt: t, pinned: false });
  const drop = new Set(snapshotsToThin(P, NOW, entries));
  const kept = entries.filter((e) => !drop.has(e.id));
  const lastHour = kept.filter((e) => NOW - e.createdAt < HOUR);
  assert.equal(lastHour.length, 12, 'all of the last hour');
  const day = kept.filter((e) => NOW - e.createdAt >= HOUR && NOW - e.createdAt < DAY);
  assert.ok(day.length >= 23 && day.length <= 24, `hourly for a day: ${day.length}`);
  const week = kept.filter((e) => NOW - e.createdAt >= DAY && NOW - e.createdAt < 7 * DAY);
  assert.ok(week.length >= 6 && week.length <= 7, `daily for a week: ${week.length}`);
  assert.ok(!kept.some((e) => NOW - e.createdAt >= 7 * DAY), 'nothing older than a week');
  assert.ok(kept.length < 50, `a week costs few snapshots: ${kept.length}`);
});

test('pinned snapshots are never thinned, whatever their age', () => {
  const old: TimelineEntry = { id: 'named', createdAt: NOW - 30 * DAY, pinned: true };
  const twin: TimelineEntry = { id: 'twin', createdAt: NOW - 3 * HOUR + 1, pinned: true };
  const other: TimelineEntry = { id: 'other', createdAt: NOW - 3 * HOUR + 2, pinned: false };
  assert.deepEqual(snapshotsToThin(P, NOW, [old, twin, other]), []);
});

test('thinning is stable: what is kept now is still kept later', () => {
  const entries: TimelineEntry[] = [];
  for (let t = NOW - 2 * DAY; t <= NOW; t += 5 * MIN) entries.push({ id: String(t), createdAt: t, pinned: false });
  const first = new Set(snapshotsToThin(P, NOW, entries));
  const survivors = entries.filter((e) => !first.has(e.id));
  const later = NOW + 3 * HOUR;
  const second = new Set(snapshotsToThin(P, later, survivors));
  const keptBoth = survivors.filter((e) => !second.has(e.id) && later - e.createdAt >= HOUR);
  // Every survivor older than an hour at `later` is the one kept for its bucket.
  const buckets = new Set(keptBoth.map((e) => (later - e.createdAt < DAY ? `h${Math.floor(e.createdAt / HOUR)}` : `d${Math.floor(e.createdAt / DAY)}`)));
  assert.equal(buckets.size, keptBoth.length);
});

test('thinning is next due when an unpinned snapshot crosses an age boundary', () => {
  const at = (age: number) => NOW - age;
  assert.equal(nextThinAt(P, NOW, []), undefined);
  assert.equal(nextThinAt(P, NOW, [{ id: 'a', createdAt: at(10 * MIN), pinned: true }]), undefined, 'pinned never moves');
  assert.equal(nextThinAt(P, NOW, [{ id: 'a', createdAt: at(10 * MIN), pinned: false }]), at(10 * MIN) + HOUR);
  assert.equal(nextThinAt(P, NOW, [{ id: 'a', createdAt: at(2 * HOUR), pinned: false }]), at(2 * HOUR) + DAY);
  assert.equal(nextThinAt(P, NOW, [{ id: 'a', createdAt: at(2 * DAY), pinned: false }]), at(2 * DAY) + 7 * DAY);
  assert.equal(nextThinAt(P, NOW, [{ id: 'a', createdAt: at(8 * DAY), pinned: false }]), undefined, 'already past every boundary');
});

test('between two boundary crossings thinning answers the same (the timer need not look before)', () => {
  const entries: TimelineEntry[] = [];
  for (let t = NOW - 3 * DAY; t <= NOW; t += 7 * MIN) entries.push({ id: String(t), createdAt: t, pinned: entries.length % 3 === 0 });
  const next = nextThinAt(P, NOW, entries)!;
  const first = snapshotsToThin(P, NOW, entries).join();
  for (let t = NOW; t < next; t += Math.max(1, Math.floor((next - NOW) / 7))) assert.equal(snapshotsToThin(P, t, entries).join(), first);
  assert.ok(next > NOW);
});
