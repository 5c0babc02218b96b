import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { testManager, type TestManager } from './manager-test-kit.js';

let t: TestManager;
/** What storage is asked (volume, snapshot) and what it answers: MemoryStorage can never tell, Btrfs can. */
const asked: Array<[string, string]> = [];
let answer = true;
/** Volumes made as copies of a snapshot. */
const copies: string[] = [];

before(async () => {
  t = await testManager();
  t.storage.unchangedSince = async (key, snapshot) => {
    asked.push([key, snapshot]);
    return answer;
  };
  const prepare = t.storage.prepare.bind(t.storage);
  t.storage.prepare = async (key, parent) => {
    copies.push(key);
    return prepare(key, parent);
  };
});
after(async () => {
  await t.close();
});
test.beforeEach(() => {
  asked.length = 0;
  copies.length = 0;
  answer = true;
});

const pauseSnapshot = async (id: string) => (await t.store.getSandbox(id))?.resumeFrom;

/** Its processes died behind forkd's back, as recovery records it: a restore of the same instance follows. */
async function lose(id: string): Promise<void> {
  t.runtime.kill(id);
  await t.store.setLost(id, { at: new Date().toISOString(), reason: 'killed for the test' });
  await t.store.transition(id, 'running', 'failed', 'killed for the test');
}

/** `op` restores `id` from a fresh copy of the snapshot's root, storage not even asked whether the root could be kept. */
async function copiedUnasked(id: string, op: () => Promise<unknown>): Promise<void> {
  copies.length = 0;
  await op();
  assert.deepEqual(asked, []);
  assert.deepEqual(copies, [`sandboxes/${id}`]);
}


test('a resume from the pause keeps the root volume the pause froze, when storage finds it unchanged since the pause snapshot', async () => {
  const s = await t.manager.create({ template: 'base' });
  await t.manager.hibernate(s.id);
  const snap = await pauseSnapshot(s.id);
  copies.length = 0;
  assert.equal((await t.manager.resume(s.id)).state, 'running');
  assert.deepEqual(asked, [[`sandboxes/${s.id}`, `snapshots/${snap}/rootfs`]]);
  assert.deepEqual(copies, [], 'no copy of the snapshot');
  assert.deepEqual(t.runtime.callsOf('restore').slice(-1), [s.id]);
  await t.manager.delete(s.id);
});

test('storage finding the root changed since the pause snapshot: a fresh copy of the snapshot', async () => {
  const s = await t.manager.create({ template: 'base' });
  await t.manager.hibernate(s.id);
  answer = false;
  copies.length = 0;
  await t.manager.resume(s.id);
  assert.equal(asked.length, 1);
  assert.deepEqual(copies, [`sandboxes/${s.id}`]);
  await t.manager.delete(s.id);
});

test('after a restart of the daemon nothing is known of the pause: the root is copied, storage not even asked', async () => {
  const s = await t.manager.create({ template: 'base' });
  await t.manager.hibernate(s.id);
  const m = t.restart();
  await m.recover();
  await copiedUnasked(s.id, () => m.resume(s.id));
  await m.delete(s.id);
  await m.close();
});

test('a resume to another state than the pause froze (a rewind while paused) copies that snapshot', async () => {
  const s = await t.manager.create({ template: 'base' });
  const early = await t.manager.snapshot(s.id);
  await t.manager.hibernate(s.id);
  await copiedUnasked(s.id, () => t.manager.rewind(s.id, early.id));
  assert.equal((await t.manager.get(s.id)).state, 'running');
  await t.manager.delete(s.id);
});

test('what a pause froze is used once: a later restore of that snapshot, after the resumed processes ran, copies it', async () => {
  const s = await t.manager.create({ template: 'base' });
  await t.manager.hibernate(s.id);
  const snap = await pauseSnapshot(s.id);
  await t.manager.resume(s.id);
  await lose(s.id);
  copies.length = 0;
  await t.manager.rewind(s.id, snap!);
  assert.equal(asked.length, 1, 'asked at the resume only');
  assert.deepEqual(copies, [`sandboxes/${s.id}`]);
  await t.manager.delete(s.id);
});

test('a hot pause resumed by a thaw ran on its root again: a later restore of that pause snapshot copies it', async () => {
  const m = t.restart({ hotPauseMs: 60_000 });
  const s = await m.create({ template: 'base' });
  await m.pause(s.id);
  const snap = await pauseSnapshot(s.id);
  await m.resume(s.id);
  assert.equal(t.runtime.callsOf('restore').includes(s.id), false, 'thawed, not restored');
  await lose(s.id);
  await copiedUnasked(s.id, () => m.rewind(s.id, snap!));
  await m.delete(s.id);
  await m.close();
});

test('FORKD_KEEP_PAUSED_ROOT=0: every resume copies the pause snapshot\'s root, storage not asked', async () => {
  const m = t.restart({ keepPausedRoot: false });
  const s = await m.create({ template: 'base' });
  await m.hibernate(s.id);
  await copiedUnasked(s.id, () => m.resume(s.id));
  await m.delete(s.id);
  await m.close();
});
