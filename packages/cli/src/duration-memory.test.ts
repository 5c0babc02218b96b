import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DurationMemory } from './duration-memory.js';
import { planFor } from './setup-plan.js';

test('the last run of each kind is remembered (owner-only file) and read back; a kind not run has none', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-durations-'));
  try {
    const file = join(dir, 'sub', 'durations.json');
    const m = new DurationMemory(file);
    assert.equal(m.last('setup'), undefined);
    m.remember('setup', [{ name: 'a', ms: 1200.4 }, { name: 'b', ms: 30 }]);
    m.remember('bench', [{ name: 'core', ms: 5 }]);
    assert.deepEqual(new DurationMemory(file).last('setup'), [{ name: 'a', ms: 1200 }, { name: 'b', ms: 30 }]);
    assert.deepEqual(new DurationMemory(file).last('bench'), [{ name: 'core', ms: 5 }]);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    m.remember('setup', [{ name: 'c', ms: 1 }]);
    assert.deepEqual(m.last('setup'), [{ name: 'c', ms: 1 }], 'a new run replaces the last');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a damaged or foreign file means nothing remembered; remembering again repairs it; an unwritable place is no error', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-durations-'));
  try {
    const file = join(dir, 'durations.json');
    for (const junk of ['{', '[]', '{"setup": [{"name": 1, "ms": 2}]}', '{"setup": [{"name": "a", "ms": -1}]}', '{"setup": 3}']) {
      await writeFile(file, junk);
      assert.equal(new DurationMemory(file).last('setup'), undefined, junk);
    }
    new DurationMemory(file).remember('setup', [{ name: 'a', ms: 1 }]);
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), { setup: [{ name: 'a', ms: 1 }] });
    new DurationMemory(join(file, 'not-a-dir', 'x.json')).remember('setup', [{ name: 'a', ms: 1 }]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('a plan is the last run when there was one, else the typical figures', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-durations-'));
  try {
    const m = new DurationMemory(join(dir, 'd.json'));
    const typical = [{ name: 'a', typicalMs: 60_000 }, { name: 'b', typicalMs: 1_000 }];
    assert.deepEqual(planFor(m, 'setup', typical), [{ name: 'a', expectedMs: 60_000 }, { name: 'b', expectedMs: 1_000 }]);
    m.remember('setup', [{ name: 'b', ms: 700 }]);
    assert.deepEqual(planFor(m, 'setup', typical), [{ name: 'b', expectedMs: 700 }]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
