import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../shared/logger.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import type { ExitWatch } from '../runtime/runtime.js';
import { ManualClock } from '../../testing/manual-clock.js';
import { LIVENESS_LOOK_MS, MIN_RELOOK_MS } from './policy-plan.js';
import { PolicyScheduler, type PolicyEvents, type PolicyLooker, type SchedulerHost } from './policy-scheduler.js';
import { DEFAULT_TIMELINE_POLICY } from './timeline-policy.js';

const MIN = 60_000;
const INTERVAL = DEFAULT_TIMELINE_POLICY.intervalMs;

/** The node as the scheduler sees it, in memory: records, snapshots, activity, exit watches, and what it reads. */
class FakeNode implements SchedulerHost, PolicyEvents, PolicyLooker {
  readonly logger = silentLogger;
  readonly records_ = new Map<string, SandboxRecord>();
  readonly snaps = new Map<string, SnapshotRecord[]>();
  readonly active = new Map<string, number>();
  readonly exits = new Map<string, () => void>();
  readonly looks: Array<{ id: string; at: number; liveness: boolean; announced: boolean }> = [];
  readonly forgotten: string[] = [];
  reads = 0;
  canWatch = true;
  #change = new Set<(id: string) => void>();
  #active = new Set<(id: string) => void>();

  constructor(readonly clock: ManualClock) {}

  add(id: string, over: Partial<SandboxRecord> = {}): SandboxRecord {
    const r: SandboxRecord = { id, template: 'base', templateId: 'base', state: 'running', limits: { memoryMb: 64, cpus: 1, pids: 64 }, env: {}, metadata: {}, createdAt: new Date(this.clock.now()).toISOString(), ...over };
    this.records_.set(id, r);
    this.changed(id);
    return r;
  }

  changed(id: string): void {
    for (const l of this.#change) l(id);
  }

  touch(id: string): void {
    this.active.set(id, this.clock.now());
    for (const l of this.#active) l(id);
  }

  async records(): Promise<SandboxRecord[]> {
    this.reads++;
    return [...this.records_.values()];
  }
  async recordOf(id: string): Promise<SandboxRecord | undefined> {
    this.reads++;
    return this.records_.get(id);
  }
  async snapshotRecords(id: string): Promise<SnapshotRecord[]> {
    this.reads++;
    return this.snaps.get(id) ?? [];
  }
  lastActive(id: string): number | undefined {
    return this.active.get(id);
  }
  watchExit(key: string, onExit: () => void): ExitWatch {
    // Without a host watch the runtime still announces the ends it causes.
    this.exits.set(key, onExit);
    return { stop: () => this.exits.delete(key), everyExit: this.canWatch };
  }
  onSandboxChange(l: (id: string) => void): () => void {
    this.#change.add(l);
    return () => this.#change.delete(l);
  }
  onActive(l: (id: string) => void): () => void {
    this.#active.add(l);
    return () => this.#active.delete(l);
  }
  async lookAt(id: string, now: number, liveness: boolean, announced = false): Promise<void> {
    this.looks.push({ id, at: now, liveness, announced });
  }
  forget(id: string): void {
    this.forgotten.push(id);
  }
}

async function setUp(prepare: (n: FakeNode) => void = () => {}) {
  const clock = new ManualClock();
  const node = new FakeNode(clock);
  prepare(node);
  const s = new PolicyScheduler(node, node, node, {}, { clock, resyncMs: 10 * MIN });
  await s.start();
  /** Moves the clock, then lets the looks and plans it caused finish. */
  const advance = async (ms: number) => {
    clock.advance(ms);
    await new Promise((r) => setImmediate(r));
    await s.settled();
  };
  return { clock, node, s, advance };
}

test('idle sandboxes are looked at only when something is due, not every pass', async () => {
  const { node, s, advance, clock } = await setUp((n) => {
    for (let i = 0; i < 1000; i++) n.add(`s${i}`);
  });
  const t0 = clock.now();
  assert.equal(s.armed, 1000);
  assert.equal(s.dueAt('s0'), t0 + MIN_RELOOK_MS, 'a first look soon, for the CPU baseline');
  await advance(MIN_RELOOK_MS);
  assert.equal(node.looks.length, 1000);
  node.looks.length = 0;
  assert.equal(s.dueAt('s0'), t0 + INTERVAL, 'then at the rolling snapshot');
  const reads = node.reads;
  await advance(INTERVAL - MIN_RELOOK_MS - 1);
  assert.equal(node.looks.length, 0, 'nothing looked at before its time');
  assert.equal(node.reads, reads, 'and nothing read');
  await advance(1);
  assert.equal(node.looks.length, 1000, 'each looked at once, when due');
  assert.ok(node.looks.every((l) => !l.liveness), 'watched: no liveness check on a timer look');
  // Found idle (no snapshot taken): the next look is an interval later, not a pass later.
  assert.equal(s.dueAt('s0'), t0 + 2 * INTERVAL);
  await advance(INTERVAL - 1);
  assert.equal(node.looks.length, 1000);
  s.stop();
});

test('a death announced by the runtime is looked at at once, with the liveness check', async () => {
  const { node, s, advance } = await setUp((n) => n.add('a'));
  assert.equal(s.watched('a'), true);
  node.exits.get('a')!();
  await advance(0);
  assert.deepEqual(
    node.looks.map((l) => [l.id, l.liveness]),
    [['a', true]],
  );
  assert.equal(s.watched('a'), true, 'watched again after the look');
  s.stop();
});

test('the watch follows the current instance; a paused sandbox is not watched', async () => {
  const { node, s, advance } = await setUp((n) => n.add('a'));
  node.records_.get('a')!.instance = 'a.1';
  node.changed('a');
  await advance(0);
  assert.deepEqual([...node.exits.keys()], ['a.1']);
  node.records_.get('a')!.state = 'paused';
  node.changed('a');
  await advance(0);
  assert.equal(node.exits.size, 0);
  assert.equal(s.watched('a'), false);
  s.stop();
});

test('a runtime that cannot announce deaths: a liveness look every LIVENESS_LOOK_MS', async () => {
  const { node, s, advance } = await setUp((n) => {
    n.canWatch = false;
    n.add('a');
  });
  await advance(LIVENESS_LOOK_MS);
  assert.deepEqual(
    node.looks.map((l) => l.liveness),
    [true],
  );
  await advance(LIVENESS_LOOK_MS);
  assert.equal(node.looks.length, 2);
  // An end the runtime caused itself (a lost lazy restore) is still announced: looked at now, not in a minute,
  // as announced (the manager confirms it even before the kernel has reaped the last task).
  node.exits.get('a')!();
  await advance(0);
  assert.deepEqual(
    node.looks.map((l) => [l.liveness, l.announced]),
    [
      [true, false],
      [true, false],
      [true, true],
    ],
  );
  s.stop();
});

test('a store write re-plans the sandbox: a new snapshot moves the next one, a lifetime comes first', async () => {
  const { node, s, advance, clock } = await setUp((n) => n.add('a'));
  await advance(2 * MIN);
  node.snaps.set('a', [{ id: 'snap1', sandboxId: 'a', createdAt: new Date(clock.now()).toISOString(), frozenMs: 1, sizeBytes: 1, pinned: true, reason: 'manual' }]);
  node.changed('a');
  await advance(0);
  assert.equal(s.dueAt('a'), clock.now() + INTERVAL);
  node.records_.get('a')!.policy = { expiresAt: new Date(clock.now() + 30_000).toISOString() };
  node.changed('a');
  await advance(0);
  assert.equal(s.dueAt('a'), clock.now() + 30_000);
  await advance(30_000);
  assert.equal(node.looks.length, 2, 'the first (baseline) look, then the lifetime');
  s.stop();
});

test('an API call brings an overdue snapshot forward (not sooner than MIN_RELOOK_MS after the last look)', async () => {
  const { node, s, advance, clock } = await setUp((n) => n.add('a'));
  await advance(MIN_RELOOK_MS);
  node.looks.length = 0;
  await advance(INTERVAL - MIN_RELOOK_MS);
  assert.equal(node.looks.length, 1, 'due, found idle');
  const lookedAt = clock.now();
  assert.equal(s.dueAt('a'), lookedAt + INTERVAL);
  await advance(5000);
  node.touch('a');
  assert.equal(s.dueAt('a'), lookedAt + MIN_RELOOK_MS, 'not sooner than MIN_RELOOK_MS after the last look');
  await advance(MIN_RELOOK_MS - 5000);
  assert.equal(node.looks.length, 2);
  await advance(2 * MIN);
  node.touch('a');
  assert.equal(s.dueAt('a'), clock.now(), 'at once, a while after the last look');
  await advance(0);
  assert.equal(node.looks.length, 3);
  s.stop();
});

test('a deleted sandbox leaves no timer, watch or memory behind', async () => {
  const { node, s, advance } = await setUp((n) => n.add('a'));
  node.records_.delete('a');
  node.changed('a');
  await advance(0);
  assert.equal(s.armed, 0);
  assert.equal(node.exits.size, 0);
  assert.deepEqual(node.forgotten, ['a']);
  s.stop();
});

test('the resync plans what no event announced, with one listing', async () => {
  const { node, s, advance } = await setUp();
  // Written behind the store's back: no event.
  node.records_.set('quiet', { id: 'quiet', template: 'base', templateId: 'base', state: 'running', limits: { memoryMb: 64, cpus: 1, pids: 64 }, env: {}, metadata: {}, createdAt: new Date().toISOString() });
  assert.equal(s.armed, 0);
  await advance(10 * MIN);
  assert.equal(s.armed, 1);
  s.stop();
});

test('looks of one sandbox never overlap; at most a few run at once', async () => {
  const clock = new ManualClock();
  const node = new FakeNode(clock);
  let running = 0;
  let most = 0;
  const release: Array<() => void> = [];
  const looker = {
    lookAt: async () => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((r) => release.push(r));
      running--;
    },
    forget: () => {},
  };
  for (let i = 0; i < 10; i++) node.add(`s${i}`);
  const s = new PolicyScheduler(node, looker, node, {}, { clock });
  await s.start();
  for (const id of node.exits.keys()) node.exits.get(id)!();
  await new Promise((r) => setImmediate(r));
  assert.equal(running, 4);
  while (release.length) {
    release.shift()!();
    await new Promise((r) => setImmediate(r));
  }
  await s.settled();
  assert.equal(most, 4);
  s.stop();
});
