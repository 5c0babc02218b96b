import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ForkdError } from '@forkd/protocol';
import type { NodeEvent } from '../node-event.js';
import { parseFrozenNote } from './deferred-dump.js';
import { testManager, type TestManager } from './manager-test-kit.js';

let t: TestManager;
const events: NodeEvent[] = [];
before(async () => {
  t = await testManager({ onEvent: (e) => events.push(e) });
});
after(async () => {
  await t.close();
});

const pending = async (p: Promise<unknown>, ms = 50) => (await Promise.race([p.then(() => 'settled', () => 'settled'), new Promise((r) => setTimeout(() => r('pending'), ms))])) === 'pending';

/** A running sandbox with a snapshot to rewind to, and its memory changed since ("the state left"). */
async function sandboxWithTarget() {
  const s = await t.manager.create({ template: 'base' });
  const target = await t.manager.snapshot(s.id);
  const targetMemory = t.runtime.instances.get(s.id)!.memory;
  t.runtime.instances.get(s.id)!.memory = 'the-state-left';
  return { s, target, targetMemory };
}

/** sandboxWithTarget, rewound to its target with the dump of the state left held back (released by `dump.release`). */
async function rewoundWithDumpHeld() {
  const made = await sandboxWithTarget();
  const old = await instanceOf(made.s.id);
  const dump = t.runtime.block('checkpoint');
  const back = await t.manager.rewind(made.s.id, made.target.id);
  await dump.reached;
  return { ...made, old, dump, back };
}

const instanceOf = async (id: string) => {
  const r = await t.store.getSandbox(id);
  return r!.instance ?? r!.id;
};
const leftOf = async (id: string) => (await t.manager.timeline(id)).filter((x) => x.reason === 'rewind');

test('a rewind answers before the state it leaves is dumped: that state is listed at once, frozen meanwhile, and a rewind forward to it waits for its dump', async () => {
  const { s, targetMemory, old, dump, back } = await rewoundWithDumpHeld();
  assert.equal(back.state, 'running');
  assert.equal(t.runtime.instances.get(await instanceOf(s.id))?.memory, targetMemory, 'at the target');
  assert.equal(t.runtime.instances.get(old)?.status, 'paused', 'the tree left is frozen, its dump not yet taken');
  const [left] = await leftOf(s.id);
  assert.ok(left, 'the state left is listed before its dump');
  assert.ok(left.createdAt <= new Date().toISOString());

  const fork = t.manager.fork(left.id);
  const forward = t.manager.rewind(s.id, left.id);
  assert.ok(await pending(fork), 'a fork of it waits for its dump (its images)');
  assert.ok(await pending(forward), 'a rewind to it too');
  dump.release();
  const [child] = await fork;
  assert.equal(t.runtime.instances.get(child!.id)?.memory, 'the-state-left', 'the fork has the state left');
  await forward;
  assert.equal(t.runtime.instances.get(await instanceOf(s.id))?.memory, 'the-state-left', 'forward again: the state left, whole');
  await t.manager.settled();
  assert.equal(t.runtime.instances.has(old), false, 'the instance left is released once dumped');
  await t.manager.delete(child!.id);
  await t.manager.delete(s.id);
});

test('a delete asked for while the state left is dumped waits for the dump, then everything goes (no deadlock on the lock)', async () => {
  const { s, old, dump } = await rewoundWithDumpHeld();
  const del = t.manager.delete(s.id);
  assert.ok(await pending(del));
  dump.release();
  await del;
  assert.equal(t.runtime.instances.has(old), false);
  assert.deepEqual((await t.store.listSnapshots(s.id)).length, 0);
  assert.deepEqual((await t.storage.list('snapshots')).filter((k) => k.includes(s.id)), []);
});

test('rewinds asked for faster than their dumps: the next waits for the last one\'s dump (one frozen tree at a time per sandbox)', async () => {
  const { s, target, dump } = await rewoundWithDumpHeld();
  const frozenBefore = [...t.runtime.instances.values()].filter((i) => i.status === 'paused').length;
  const again = t.manager.rewind(s.id, target.id);
  assert.ok(await pending(again), 'the second rewind waits');
  assert.equal([...t.runtime.instances.values()].filter((i) => i.status === 'paused').length, frozenBefore, 'nothing more frozen meanwhile');
  dump.release();
  assert.equal((await again).state, 'running');
  await t.manager.settled();
  assert.equal((await leftOf(s.id)).length, 2);
  await t.manager.delete(s.id);
});

test('a dump of the state left that fails: the rewind stands, the snapshot is forgotten, the instance released', async () => {
  const { s, target, targetMemory } = await sandboxWithTarget();
  const old = await instanceOf(s.id);
  t.runtime.fail('checkpoint', new ForkdError('INTERNAL', 'criu dump failed'), 1);
  await t.manager.rewind(s.id, target.id);
  await t.manager.settled();
  assert.deepEqual(await leftOf(s.id), [], 'no snapshot without images is listed');
  const told = events.filter((e) => e.sandboxId === s.id && e.operation === 'snapshot-lost');
  assert.equal(told.length, 1, 'the tenant is told, in its event log');
  assert.doesNotMatch(told[0]!.detail, /criu/, "the tool's words stay in the node's log");
  assert.equal(t.runtime.instances.get(await instanceOf(s.id))?.memory, targetMemory);
  assert.equal(t.runtime.instances.has(old), false);
  assert.deepEqual((await t.storage.list('snapshots')).filter((k) => k.includes('.tmp-')), []);
  await t.manager.delete(s.id);
});

test('a dump of the state left refused because the agent still held a closed connection: taken once more as an ordinary dump (its guest let go of first)', async () => {
  const { s, target } = await sandboxWithTarget();
  const old = await instanceOf(s.id);
  t.runtime.fail('checkpoint', new ForkdError('INTERNAL', 'criu dump failed', { stderrTail: 'Error (criu/sk-unix.c:123): unix: Unix socket 4242 not found' }), 1);
  await t.manager.rewind(s.id, target.id);
  await t.manager.settled();
  const [left] = await leftOf(s.id);
  assert.ok(left, 'kept');
  assert.equal(t.runtime.instances.has(old), false, 'released after its dump');
  const forward = await t.manager.rewind(s.id, left.id);
  assert.equal(forward.state, 'running');
  assert.equal(t.runtime.instances.get(await instanceOf(s.id))?.memory, 'the-state-left');
  await t.manager.delete(s.id);
});

test('a freeze that fails gives the rewind up: the sandbox runs on as it was, nothing listed', async () => {
  const { s, target } = await sandboxWithTarget();
  const old = await instanceOf(s.id);
  t.runtime.fail('freeze', new ForkdError('INTERNAL', 'freeze failed'), 1);
  await assert.rejects(t.manager.rewind(s.id, target.id), (e) => e instanceof ForkdError && e.message === 'freeze failed');
  assert.equal(await instanceOf(s.id), old);
  assert.equal(t.runtime.instances.get(old)?.status, 'running');
  assert.equal(t.runtime.instances.get(old)?.memory, 'the-state-left');
  assert.deepEqual(await leftOf(s.id), []);
  await t.manager.settled();
  assert.deepEqual([...t.runtime.instances.keys()].filter((k) => k.startsWith(`${s.id}.`)), [], 'the target instance went');
  await t.manager.delete(s.id);
});

test('a restore that fails after the freeze thaws the tree: it runs on as it was', async () => {
  const { s, target } = await sandboxWithTarget();
  const old = await instanceOf(s.id);
  t.runtime.fail('restore', new ForkdError('INTERNAL', 'restore failed'), 1);
  await assert.rejects(t.manager.rewind(s.id, target.id));
  assert.equal(t.runtime.instances.get(old)?.status, 'running');
  assert.deepEqual(await leftOf(s.id), []);
  assert.deepEqual((await t.storage.list('snapshots')).filter((k) => k.includes('.tmp-')), []);
  await t.manager.delete(s.id);
});

test('a daemon that died before the dump: its restart takes the dump from the frozen instance and releases it', async () => {
  // The first daemon "dies" with its dump held: it never ends.
  const { s, old, dump: stale } = await rewoundWithDumpHeld();
  const [left] = await leftOf(s.id);
  const m = t.restart();
  await m.recover();
  assert.equal(t.runtime.instances.has(old), false, 'the instance left is released after its dump');
  await m.settled();
  const forward = await m.rewind(s.id, left!.id);
  assert.equal(forward.state, 'running');
  assert.equal(t.runtime.instances.get(await instanceOf(s.id))?.memory, 'the-state-left', 'the restart dumped the state left');
  await m.settled();
  await m.delete(s.id);
  stale.release();
  await t.manager.settled();
});

test('a daemon that died before the switch: at its restart the state left is forgotten (the sandbox still runs it)', async () => {
  const { s, target } = await sandboxWithTarget();
  const old = await instanceOf(s.id);
  // As the crash would leave it: the state left recorded and its draft marked, the tree frozen, no switch.
  const setInstance = t.store.setInstance.bind(t.store);
  t.store.setInstance = async () => {
    throw new ForkdError('INTERNAL', 'the store write failed');
  };
  const thaw = t.runtime.block('thaw');
  const rewound = t.manager.rewind(s.id, target.id);
  await thaw.reached; // the daemon "dies" as it gives up: the tree still frozen, the record still there
  t.store.setInstance = setInstance;
  assert.equal((await leftOf(s.id)).length, 1);
  assert.equal(t.runtime.instances.get(old)?.status, 'paused');
  const m = t.restart();
  await m.recover();
  assert.deepEqual(await leftOf(s.id), [], 'nothing was left: forgotten');
  assert.equal(await instanceOf(s.id), old);
  assert.equal(t.runtime.instances.get(old)?.status, 'running', 'thawed, it runs on');
  assert.deepEqual((await t.storage.list('snapshots')).filter((k) => k.includes('.tmp-')), []);
  thaw.release();
  await assert.rejects(rewound, (e) => e instanceof ForkdError && e.message === 'the store write failed');
  await m.delete(s.id);
});

test('frozen notes: only the shape forkd writes is taken', () => {
  assert.deepEqual(parseFrozenNote('{"instance":"sbx-1.ab12","guestProtocol":3}'), { instance: 'sbx-1.ab12', guestProtocol: 3 });
  for (const bad of ['', 'null', '[]', '{"instance":"../x","guestProtocol":3}', '{"instance":"a/b","guestProtocol":3}', '{"instance":"a","guestProtocol":-1}', '{"instance":"a","guestProtocol":"3"}', '{"instance":"' + 'a'.repeat(200) + '","guestProtocol":1}', '{not json']) {
    assert.equal(parseFrozenNote(bad), undefined, bad);
  }
});
