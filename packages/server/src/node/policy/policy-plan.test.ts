import { test } from 'node:test';
import assert from 'node:assert/strict';
import { activityMakesDue, LIVENESS_LOOK_MS, MIN_RELOOK_MS, nextLookAt, type PlanFacts } from './policy-plan.js';
import { DEFAULT_TIMELINE_POLICY } from './timeline-policy.js';

const MIN = 60_000;
const T = Date.UTC(2026, 11, 3, 8, 0, 0);

function facts(over: Partial<PlanFacts> = {}): PlanFacts {
  return {
    state: 'running',
    expiresAt: Number.NaN,
    timeline: DEFAULT_TIMELINE_POLICY,
    idleMs: 0,
    lastSnapshotAt: T,
    lastActiveAt: T,
    thinAt: undefined,
    lookedAt: T - 1,
    exitWatched: true,
    seenAt: T - 60 * MIN,
    ...over,
  };
}

test('a running sandbox is next looked at when its rolling snapshot is due', () => {
  assert.equal(nextLookAt(facts()), T + 5 * MIN);
});

test('the earliest of lifetime, snapshot, idle deadline and thinning wins', () => {
  assert.equal(nextLookAt(facts({ expiresAt: T + MIN })), T + MIN);
  assert.equal(nextLookAt(facts({ idleMs: 2 * MIN, lastActiveAt: T + 10_000 })), T + 2 * MIN + 10_000);
  assert.equal(nextLookAt(facts({ thinAt: T + 3 * MIN })), T + 3 * MIN);
});

test('an idle sandbox whose snapshot is overdue is looked at again an interval after its last look, not every pass', () => {
  const lookedAt = T + 5 * MIN;
  assert.equal(nextLookAt(facts({ lookedAt })), lookedAt + 5 * MIN);
});

test('something due at or before the last look (a failed pause, a timeout) waits MIN_RELOOK_MS', () => {
  const lookedAt = T + 20 * MIN;
  assert.equal(nextLookAt(facts({ idleMs: MIN, lastActiveAt: T, lookedAt })), lookedAt + MIN_RELOOK_MS);
  assert.equal(nextLookAt(facts({ expiresAt: T, lookedAt })), lookedAt + MIN_RELOOK_MS);
});

test('never looked at: soon after it was seen (its CPU baseline), at once if it has no recorded activity and an idle deadline', () => {
  assert.equal(nextLookAt(facts({ lookedAt: Number.NEGATIVE_INFINITY, seenAt: T })), T + MIN_RELOOK_MS);
  assert.equal(nextLookAt(facts({ lookedAt: Number.NEGATIVE_INFINITY, seenAt: T, state: 'paused', expiresAt: T + 9 * MIN })), T + 9 * MIN, 'paused: no CPU to follow');
  assert.equal(nextLookAt(facts({ idleMs: MIN, lastActiveAt: undefined, lookedAt: Number.NEGATIVE_INFINITY })), Number.NEGATIVE_INFINITY);
});

test('without an exit watch, a liveness look every LIVENESS_LOOK_MS', () => {
  const lookedAt = T + 1000;
  assert.equal(nextLookAt(facts({ exitWatched: false, lookedAt })), lookedAt + LIVENESS_LOOK_MS);
});

test('nothing to do: no timer at all', () => {
  assert.equal(nextLookAt(facts({ timeline: { ...DEFAULT_TIMELINE_POLICY, intervalMs: 0 } })), undefined);
  assert.equal(nextLookAt(facts({ state: 'failed', expiresAt: T })), undefined);
  assert.equal(nextLookAt(facts({ state: 'stopping', thinAt: T })), undefined);
});

test('a paused sandbox: only its lifetime and its thinning', () => {
  assert.equal(nextLookAt(facts({ state: 'paused', idleMs: MIN, exitWatched: false })), undefined);
  assert.equal(nextLookAt(facts({ state: 'paused', expiresAt: T + 9 * MIN, thinAt: T + 8 * MIN })), T + 8 * MIN);
});

test('an API call brings a look forward only for an overdue rolling snapshot', () => {
  assert.equal(activityMakesDue(facts(), T + 4 * MIN), false);
  assert.equal(activityMakesDue(facts(), T + 5 * MIN), true);
  assert.equal(activityMakesDue(facts({ state: 'paused' }), T + 9 * MIN), false);
  assert.equal(activityMakesDue(facts({ timeline: { ...DEFAULT_TIMELINE_POLICY, intervalMs: 0 } }), T + 9 * MIN), false);
});
