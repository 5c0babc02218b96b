import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { VolumeUse, type PrunableCache } from './volume-use.js';

const DAY = 86_400_000;

/** A cache of named entries made at given times; removals are recorded and may be slowed or fail. */
function fakeCache(made: Record<string, number>, opts: { onMadeAt?: (key: string) => void; fail?: string; slow?: Promise<void> } = {}) {
  const entries = new Map(Object.entries(made));
  const removing: string[] = [];
  const cache: PrunableCache = {
    keys: async () => [...entries.keys()],
    madeAt: async (k) => {
      opts.onMadeAt?.(k);
      return entries.get(k);
    },
    remove: async (k) => {
      removing.push(k);
      await opts.slow;
      if (k === opts.fail) throw new Error('busy');
      entries.delete(k);
    },
  };
  return { cache, entries, removing };
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-use-'));
  try {
    await fn(join(dir, 'use'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('entries neither made nor used within the age go; a use, kept on disk, keeps one', () =>
  withDir(async (dir) => {
    const now = Date.now();
    const { cache, entries } = fakeCache({ 'steps/old': now - 10 * DAY, 'steps/used': now - 10 * DAY, 'steps/new': now - DAY });
    await new VolumeUse(dir).use('steps/used', now - 2 * DAY);
    // Another instance (a restarted daemon) reads the use from the file.
    const r = await new VolumeUse(dir).prune(cache, 7 * DAY, now);
    assert.deepEqual(r, { removed: ['steps/old'], failed: 0 });
    assert.deepEqual([...entries.keys()], ['steps/used', 'steps/new']);
  }));

test('an entry asked for while the prune is deciding is kept', () =>
  withDir(async (dir) => {
    const now = Date.now();
    const use = new VolumeUse(dir);
    // The build's lookup lands between the prune's reads and its removal.
    const { cache, entries } = fakeCache({ 'steps/a': now - 10 * DAY, 'steps/b': now - 10 * DAY }, { onMadeAt: (k) => k === 'steps/a' && void use.hold(k) });
    const r = await use.prune(cache, 7 * DAY, now + DAY);
    assert.deepEqual(r.removed, ['steps/b']);
    assert.ok(entries.has('steps/a'));
  }));

test('a lookup during a removal waits for it, and a failed removal is counted and left', () =>
  withDir(async (dir) => {
    const now = Date.now();
    let release!: () => void;
    const slow = new Promise<void>((r) => (release = r));
    const use = new VolumeUse(dir);
    const { cache, entries, removing } = fakeCache({ 'layers/x': now - 10 * DAY, 'layers/y': now - 10 * DAY }, { slow, fail: 'layers/y' });
    const pruning = use.prune(cache, 7 * DAY, now);
    while (!removing.length) await new Promise((r) => setTimeout(r, 1));
    let held = false;
    const lookup = use.hold('layers/x').then(() => (held = true));
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(held, false, 'the lookup waits while x is being removed');
    release();
    await lookup;
    assert.equal(entries.has('layers/x'), false, 'and then finds it gone');
    assert.deepEqual(await pruning, { removed: ['layers/x'], failed: 1 });
    assert.ok(entries.has('layers/y'));
  }));
