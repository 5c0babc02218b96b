import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExportRecord, FleetStore, NodeRecord } from './fleet-store.js';

const node = (id: string, extra: Partial<NodeRecord> = {}): NodeRecord => ({
  id,
  url: `http://10.0.0.${id.length}:8081`,
  sealedToken: `sealed-${id}`,
  state: 'active',
  capacity: { memoryBytes: 8 * 2 ** 30, memoryFreeBytes: 2 ** 30, cpus: 4, poolFreeBytes: 50 * 2 ** 30, running: 3, paused: 1, templates: ['base', 'acme/py'] },
  registeredAt: '2026-01-01T00:00:00.000Z',
  lastSeenAt: '2026-01-01T00:00:05.000Z',
  ...extra,
});

const exported = (snapshotId: string, sandboxId: string, exportedAt: string): ExportRecord => ({ snapshotId, sandboxId, manifest: `manifests/${snapshotId}.json`, node: 'node-a', exportedAt });

/**
 * The contract of a FleetStore, as node:test tests: every ControlStore
 * (SQLite and PostgreSQL) runs them with its own `open`, which must give an
 * empty store each time it is called.
 */
export function fleetStoreConformance(name: string, open: () => Promise<FleetStore & { close(): Promise<void> }>): void {
  describe(`FleetStore conformance: ${name}`, () => {
    let store: FleetStore & { close(): Promise<void> };
    before(async () => {
      store = await open();
    });
    after(async () => {
      await store.close();
    });

    test('nodes: upsert adds then replaces whole, listed by id, state set, removed', async () => {
      assert.deepEqual(await store.listNodes(), []);
      await store.upsertNode(node('node-b'));
      await store.upsertNode(node('node-a', { state: 'draining' }));
      assert.deepEqual(await store.node('node-b'), node('node-b'), 'every field comes back as given');
      assert.deepEqual((await store.listNodes()).map((n) => n.id), ['node-a', 'node-b']);
      const beat = node('node-b', { lastSeenAt: '2026-01-01T00:01:00.000Z', capacity: { ...node('x').capacity, running: 7, templates: [] } });
      await store.upsertNode(beat);
      assert.deepEqual(await store.node('node-b'), beat, 'a heartbeat replaces the record');
      assert.equal(await store.setNodeState('node-b', 'lost'), true);
      assert.equal((await store.node('node-b'))?.state, 'lost');
      assert.equal(await store.setNodeState('node-nope', 'lost'), false, 'an unknown node');
      assert.equal(await store.node('node-nope'), undefined);
      await store.removeNode('node-a');
      await store.removeNode('node-a');
      assert.deepEqual((await store.listNodes()).map((n) => n.id), ['node-b']);
    });

    test('placements: placed, moved, listed per node and kind sorted, unplaced; a removed node keeps its placements', async () => {
      assert.equal(await store.placement('sandbox', 'sbx-1'), undefined);
      await store.place('sandbox', 'sbx-2', 'node-p');
      await store.place('sandbox', 'sbx-1', 'node-p');
      await store.place('snapshot', 'sbx-1', 'node-q');
      assert.equal(await store.placement('sandbox', 'sbx-1'), 'node-p');
      assert.equal(await store.placement('snapshot', 'sbx-1'), 'node-q', 'kinds are separate');
      assert.deepEqual(await store.placedOn('sandbox', 'node-p'), ['sbx-1', 'sbx-2']);
      assert.deepEqual(await store.placedOn('snapshot', 'node-p'), []);
      await store.place('sandbox', 'sbx-2', 'node-q');
      assert.equal(await store.placement('sandbox', 'sbx-2'), 'node-q', 'moved');
      assert.deepEqual(await store.placedOn('sandbox', 'node-p'), ['sbx-1']);
      await store.upsertNode(node('node-p'));
      await store.removeNode('node-p');
      assert.equal(await store.placement('sandbox', 'sbx-1'), 'node-p');
      await store.unplace('sandbox', 'sbx-1');
      await store.unplace('sandbox', 'sbx-1');
      assert.equal(await store.placement('sandbox', 'sbx-1'), undefined);
      assert.deepEqual(await store.placedOn('sandbox', 'node-p'), []);
    });

    test('exports: found by snapshot; the latest of a sandbox is the newest by time, not by insertion', async () => {
      assert.equal(await store.latestExport('sbx-e'), undefined);
      await store.recordExport(exported('snap-2', 'sbx-e', '2026-02-02T00:00:00.000Z'));
      await store.recordExport(exported('snap-3', 'sbx-e', '2026-02-03T00:00:00.000Z'));
      await store.recordExport(exported('snap-1', 'sbx-e', '2026-02-01T00:00:00.000Z'));
      await store.recordExport(exported('snap-9', 'sbx-other', '2026-03-01T00:00:00.000Z'));
      assert.deepEqual(await store.latestExport('sbx-e'), exported('snap-3', 'sbx-e', '2026-02-03T00:00:00.000Z'));
      assert.deepEqual(await store.exportOf('snap-1'), exported('snap-1', 'sbx-e', '2026-02-01T00:00:00.000Z'));
      assert.equal(await store.exportOf('snap-nope'), undefined);
    });

    test('leases: exclusive, renewed by the holder, taken by another after expiry, released only by the holder', async () => {
      assert.equal(await store.tryLease('thin', 'r1', 60_000), true);
      assert.equal(await store.tryLease('thin', 'r2', 60_000), false, 'held by r1');
      assert.equal(await store.tryLease('thin', 'r1', 60_000), true, 'renewed by its holder');
      assert.equal(await store.tryLease('other', 'r2', 60_000), true, 'names are separate');
      await store.releaseLease('thin', 'r2');
      assert.equal(await store.tryLease('thin', 'r2', 60_000), false, 'another holder cannot release it');
      await store.releaseLease('thin', 'r1');
      assert.equal(await store.tryLease('thin', 'r2', 300), true, 'free once released');
      assert.equal(await store.tryLease('thin', 'r1', 60_000), false);
      await sleep(400);
      assert.equal(await store.tryLease('thin', 'r1', 60_000), true, 'taken after expiry');
      assert.equal(await store.tryLease('thin', 'r2', 60_000), false, 'the old holder lost it');
    });

    test('leases: of holders racing for a free lease, exactly one wins', async () => {
      const holders = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'];
      const won = await Promise.all(holders.map((h) => store.tryLease('raced', h, 60_000)));
      assert.equal(won.filter(Boolean).length, 1);
    });
  });
}
