import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { SandboxEvent } from '../control-plane/node-audit.js';
import { forwardTo } from '../node-contract/forward-to.js';
import { FakeTransferNode, fakeSnapshot, type FakeBlobs } from '../testing/fake-transfer-node.js';
import { MemoryFleetStore } from '../testing/memory-fleet-store.js';
import { testCipher } from '../testing/test-cipher.js';
import { openFleet } from './fleet.js';
import { clearTombstones, reconcileReturnedNodes } from './returned-nodes.js';
import { DELETED_UNDER } from './fleet-store.js';
import { ForkdError } from '@forkd/protocol';

const capacity = { memoryBytes: 8 * 2 ** 30, memoryFreeBytes: 4 * 2 ** 30, cpus: 4, poolFreeBytes: 10 * 2 ** 30, running: 0, paused: 0, templates: ['base'] };

/** Two fake nodes in a fleet; `a` was lost, and `s1`, `s3` were restored on `b` from their last export. */
async function lostAndRestored() {
  const blobs: FakeBlobs = new Map();
  const nodes = { a: new FakeTransferNode(blobs), b: new FakeTransferNode(blobs) };
  const store = new MemoryFleetStore();
  const fleet = openFleet({ store, cipher: testCipher(), joinToken: 'fjt_test', deadlineMs: 10_000, connect: (url) => ({ ...forwardTo(nodes[new URL(url).hostname.split('.')[0] as 'a' | 'b'].service), close() {} }) });
  const beat = (id: 'a' | 'b') => fleet.nodes.heartbeat({ id, url: `http://${id}.test`, token: `fnt_token-of-${id}-0123456789`, capacity });
  await beat('a');
  await beat('b');
  const [x1, x2] = [fakeSnapshot('sbx-s1s1s1s1s1s1', { name: 'old' }), fakeSnapshot('sbx-s1s1s1s1s1s1')];
  const [z1] = [fakeSnapshot('sbx-s3s3s3s3s3s3')];
  nodes.a.add('sbx-s1s1s1s1s1s1', 'running', [x1!, x2!]);
  nodes.a.add('sbx-s2s2s2s2s2s2', 'running', [fakeSnapshot('sbx-s2s2s2s2s2s2')]);
  nodes.a.add('sbx-s3s3s3s3s3s3', 'running', [z1!]);
  for (const id of nodes.a.sandboxes.keys()) await store.place('sandbox', id, 'a');
  // a is lost; s1 and s3 come back on b from their exports (s2 had none: it stays placed on a).
  await store.setNodeState('a', 'lost');
  for (const snap of [x2!, z1!]) {
    const { manifest } = await nodes.a.service.exportSnapshot(snap.id);
    await nodes.b.service.importSnapshot(manifest, { asSandbox: true });
    await store.place('sandbox', snap.sandboxId, 'b');
  }
  nodes.b.sandboxes.get('sbx-s1s1s1s1s1s1')!.info.state = 'running';
  const y1 = fakeSnapshot('sbx-s1s1s1s1s1s1', { name: 'on-b' });
  nodes.b.sandboxes.get('sbx-s1s1s1s1s1s1')!.timeline.push(y1);
  const events: SandboxEvent[] = [];
  const opts = { fleet: fleet.service, deadlineMs: 10_000, counters: fleet.counters, file: (e: SandboxEvent) => void events.push(e) };
  return { nodes, store, fleet, beat, opts, events, snaps: { x1: x1!, x2: x2!, y1, z1: z1! } };
}

test('a lost node that comes back: stale copies are paused, their snapshots join the timeline where the sandbox lives, then deleted; its own sandboxes are its again', async () => {
  const { nodes, store, fleet, beat, opts, events, snaps } = await lostAndRestored();
  const s3 = 'sbx-s3s3s3s3s3s3';
  assert.deepEqual(await reconcileReturnedNodes({ ...opts, now: () => Date.now() + 60_000 }), [], 'a lost node not heard from again is left alone');
  await beat('a');
  assert.equal((await store.node('a'))?.state, 'lost', 'a heartbeat alone does not make it active: it is reconciled first');
  // The stale copy of s3 cannot leave: none of its snapshots export.
  nodes.a.failExportsOf.add(s3);
  assert.deepEqual(await reconcileReturnedNodes(opts), ['a']);
  assert.equal((await store.node('a'))?.state, 'active');

  // s1: merged. The copy on a is gone; b's timeline has its own, the one restored, and a's (the old one and the pause's), once each.
  assert.equal(nodes.a.sandboxes.has('sbx-s1s1s1s1s1s1'), false);
  const tl = nodes.b.sandboxes.get('sbx-s1s1s1s1s1s1')!.timeline;
  const ids = tl.map((x) => x.id);
  assert.equal(new Set(ids).size, ids.length, 'no snapshot twice');
  for (const x of [snaps.x1, snaps.x2, snaps.y1]) assert.ok(ids.includes(x.id), x.id);
  const pauseSnap = tl.find((x) => x.reason === 'pause');
  assert.ok(pauseSnap, 'the stale copy was paused and its pause snapshot came along');
  assert.equal(nodes.b.sandboxes.get('sbx-s1s1s1s1s1s1')!.info.state, 'running', 'the live copy is untouched');
  assert.equal(await store.placement('sandbox', 'sbx-s1s1s1s1s1s1'), 'b');
  assert.equal(await store.placement('snapshot', pauseSnap.id), 'b');
  assert.equal(await store.placement('snapshot', snaps.x1.id), 'b');

  // s2: never restored, so the node's again, as it reports it.
  assert.equal(await store.placement('sandbox', 'sbx-s2s2s2s2s2s2'), 'a');
  assert.equal((await fleet.node.get('sbx-s2s2s2s2s2s2')).state, 'running');

  // s3: kept paused on a, not deleted, not served; the list shows it once, from b.
  assert.equal(nodes.a.sandboxes.get(s3)?.info.state, 'paused', 'the copy that could not leave is paused, not deleted');
  assert.equal(await store.placement('sandbox', s3), 'b');
  assert.equal((await fleet.node.get(s3)).state, 'paused', 'served from b (its restored copy)');
  const listed = (await fleet.node.list()).map((s) => s.id).sort();
  assert.deepEqual(listed, ['sbx-s1s1s1s1s1s1', 'sbx-s2s2s2s2s2s2', s3]);

  assert.deepEqual([fleet.counters.returnedNodes, fleet.counters.count('merged'), fleet.counters.count('reclaimed'), fleet.counters.count('kept')], [1, 1, 1, 1]);
  assert.match(fleet.counters.render(), /^forkd_fleet_returned_sandboxes_total\{outcome="kept"\} 1$/m);
  const by = (id: string) => events.filter((e) => e.sandboxId === id);
  assert.deepEqual(by('sbx-s1s1s1s1s1s1').map((e) => [e.operation, e.code]), [['recover', 'OK']]);
  assert.match(by('sbx-s1s1s1s1s1s1')[0]!.detail, /stale copy.*joined this timeline.*deleted/);
  assert.deepEqual(by('sbx-s2s2s2s2s2s2').map((e) => e.code), ['OK']);
  assert.deepEqual(by(s3).map((e) => e.code), ['INTERNAL']);
  assert.match(by(s3)[0]!.detail, /kept on a, paused/);

  assert.deepEqual(await reconcileReturnedNodes(opts), [], 'once');
});

test('a returned node whose list fails stays lost (nothing of it served) until a pass gets through', async () => {
  const { nodes, store, beat, opts } = await lostAndRestored();
  await beat('a');
  nodes.a.failing.add('list');
  assert.deepEqual(await reconcileReturnedNodes(opts), []);
  assert.equal((await store.node('a'))?.state, 'lost');
  nodes.a.failing.delete('list');
  assert.deepEqual(await reconcileReturnedNodes(opts), ['a']);
  assert.equal(nodes.a.sandboxes.has('sbx-s1s1s1s1s1s1'), false);
});

test('a sandbox deleted while its old node was lost stays deleted when that node comes back; tombstones go once no node is lost', async () => {
  const { nodes, store, fleet, beat, opts } = await lostAndRestored();
  await fleet.node.delete('sbx-s1s1s1s1s1s1');
  assert.equal(await store.placement('deleted', 'sbx-s1s1s1s1s1s1'), DELETED_UNDER, 'deleted while a was lost: a tombstone');
  await beat('a');
  assert.deepEqual(await reconcileReturnedNodes(opts), ['a']);
  assert.equal(nodes.a.sandboxes.has('sbx-s1s1s1s1s1s1'), false, 'the copy on a went too');
  await assert.rejects(fleet.node.get('sbx-s1s1s1s1s1s1'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  assert.equal(fleet.counters.count('discarded'), 1);
  // No node lost now: a delete leaves no tombstone, and the old ones are cleared.
  await store.place('deleted', 'sbx-oldoldoldold', DELETED_UNDER);
  await clearTombstones(fleet.service);
  assert.deepEqual(await store.placedOn('deleted', DELETED_UNDER), []);
  await fleet.node.delete('sbx-s2s2s2s2s2s2');
  assert.deepEqual(await store.placedOn('deleted', DELETED_UNDER), []);
});

test('a node new to the fleet that already holds sandboxes starts lost and is reconciled before it is served; an empty one is active at once', async () => {
  const { nodes, store, fleet, opts } = await lostAndRestored();
  // a was removed while lost (forkd nodes rm) and comes back as a stranger.
  await store.removeNode('a');
  await fleet.nodes.heartbeat({ id: 'a', url: 'http://a.test', token: 'fnt_token-of-a-0123456789', capacity: { ...capacity, running: 3 } });
  assert.equal((await store.node('a'))?.state, 'lost');
  assert.deepEqual(await reconcileReturnedNodes(opts), ['a']);
  assert.equal(nodes.a.sandboxes.has('sbx-s1s1s1s1s1s1'), false, 'its stale copy of s1 (restored on b) was merged, not served twice');
  await store.removeNode('b');
  await fleet.nodes.heartbeat({ id: 'b', url: 'http://b.test', token: 'fnt_token-of-b-0123456789', capacity });
  assert.equal((await store.node('b'))?.state, 'active');
});
