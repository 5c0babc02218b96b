import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MemoryFleetStore } from '../testing/memory-fleet-store.js';
import type { NodeRecord } from './fleet-store.js';
import { markLostNodes } from './lost-nodes.js';

const rec = (id: string, lastSeenAt: number, state: NodeRecord['state'] = 'active'): NodeRecord => ({
  id,
  url: `http://${id}`,
  sealedToken: 'x',
  state,
  registeredAt: new Date(0).toISOString(),
  lastSeenAt: new Date(lastSeenAt).toISOString(),
  capacity: { memoryBytes: 0, memoryFreeBytes: 0, cpus: 0, poolFreeBytes: 0, running: 0, paused: 0, templates: [] },
});

test('lost nodes: a node silent past the deadline is marked lost once, with the sandboxes placed on it', async () => {
  const store = new MemoryFleetStore();
  const now = 1_000_000;
  await store.upsertNode(rec('quiet', now - 200_000));
  await store.upsertNode(rec('fresh', now - 1_000));
  await store.upsertNode(rec('draining', now - 500_000, 'draining'));
  await store.place('sandbox', 'sbx-1', 'quiet');
  await store.place('sandbox', 'sbx-2', 'quiet');
  await store.place('sandbox', 'sbx-3', 'fresh');
  const seen: Array<[string, string[]]> = [];
  const opts = { store, lostMs: 120_000, now: () => now, onLost: async (n: NodeRecord, s: string[]) => void seen.push([n.id, s]) };
  assert.deepEqual(await markLostNodes(opts), ['draining', 'quiet']);
  assert.deepEqual(seen, [['draining', []], ['quiet', ['sbx-1', 'sbx-2']]]);
  assert.equal((await store.node('quiet'))?.state, 'lost');
  assert.equal((await store.node('fresh'))?.state, 'active');
  assert.deepEqual(await markLostNodes(opts), [], 'already lost: reported once');
  assert.deepEqual(await markLostNodes({ ...opts, now: () => now + 200_000 }), ['fresh']);
  const failing = { ...opts, now: () => now + 900_000, onLost: async () => Promise.reject(new Error('restore failed')) };
  await store.upsertNode(rec('late', now));
  assert.deepEqual(await markLostNodes(failing), ['late'], 'a failed restore does not stop the pass');
});
