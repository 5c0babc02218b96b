import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { HotPauses } from './hot-pauses.js';
import { AdmissionGate } from './admission-gate.js';
import { NodeAdmission } from './admission.js';
import { SandboxDisk } from './sandbox-disk.js';
import type { SandboxRecord } from '../../store/store.js';

function pauses(windowMs = 60_000) {
  const destroyed: string[] = [];
  let gate: Promise<void> = Promise.resolve();
  const hot = new HotPauses(windowMs, async (key) => {
    await gate;
    destroyed.push(key);
  }, silentLogger);
  return { hot, destroyed, hold: (p: Promise<void>) => (gate = p) };
}

test('a kept instance is taken once, with its snapshot; off keeps nothing', async () => {
  const { hot, destroyed } = pauses();
  assert.equal(hot.keep('a', 'a.k', 'snap-1'), true);
  assert.deepEqual([...hot.ids()], ['a']);
  const h = await hot.take('a');
  assert.equal(h?.key, 'a.k');
  assert.equal(h?.snapshot, 'snap-1');
  assert.equal(await hot.take('a'), undefined);
  assert.deepEqual(destroyed, []);
  const off = pauses(0);
  assert.equal(off.hot.keep('a', 'a', 's'), false);
  assert.equal(off.hot.ids().size, 0);
});

test('the window ends in a drop of the frozen instance', async () => {
  const { hot, destroyed } = pauses(20);
  hot.keep('a', 'a', 's');
  await new Promise((r) => setTimeout(r, 80));
  assert.deepEqual(destroyed, ['a']);
  assert.equal(await hot.take('a'), undefined);
});

test('take waits for a drop in flight (the key is not reused under a destroy)', async () => {
  const { hot, destroyed, hold } = pauses();
  let open!: () => void;
  hold(new Promise<void>((r) => (open = r)));
  hot.keep('a', 'a', 's');
  const dropping = hot.drop('a', 'test');
  let taken = false;
  const t = hot.take('a').then((h) => {
    taken = true;
    return h;
  });
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(taken, false, 'take returned while the destroy still ran');
  open();
  assert.equal(await t, undefined);
  await dropping;
  assert.deepEqual(destroyed, ['a']);
});

test('forget leaves the instance to the caller; reclaim drops all, oldest first', async () => {
  const { hot, destroyed } = pauses();
  hot.keep('a', 'a', 's');
  await hot.forget('a');
  assert.deepEqual(destroyed, []);
  hot.keep('b', 'b', 's');
  await new Promise((r) => setTimeout(r, 5));
  hot.keep('c', 'c', 's');
  assert.equal(await hot.reclaim('test'), 2);
  assert.deepEqual(destroyed, ['b', 'c']);
  assert.equal(await hot.reclaim('test'), 0);
});

test('admission refused for memory reclaims hot pauses once and checks again; disk refusals do not', async () => {
  const held = new Set(['hot']);
  const records: SandboxRecord[] = [{ id: 'hot', state: 'paused', limits: { memoryMb: 800, cpus: 1, pids: 100, diskMb: 100 } } as SandboxRecord];
  let reclaimed = 0;
  const gate = new AdmissionGate(
    async () => records.map((r) => (held.has(r.id) ? { ...r, state: 'running' as const } : r)),
    new NodeAdmission({ memoryMb: 1000, cpus: 2 }, { memory: 1, cpus: 0 }),
    new SandboxDisk({ defaultDiskMb: 100, free: { minFreeMb: 0, minFreePct: 0 }, overcommit: 0 }, silentLogger),
    async () => {
      reclaimed++;
      const n = held.size;
      held.clear();
      return n;
    },
  );
  const t = await gate.admit({ memory: { memoryMb: 500, cpus: 0 }, ids: ['new'] });
  assert.equal(reclaimed, 1);
  t.release();
  // Nothing left to reclaim: the refusal stands.
  await assert.rejects(gate.admit({ memory: { memoryMb: 2000, cpus: 0 }, ids: ['big'] }), (e: unknown) => e instanceof ForkdError && e.code === 'RESOURCE_EXHAUSTED');
  assert.equal(reclaimed, 2);
});
