import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ForkdError, NodeHeartbeatRequest } from '@forkd/protocol';
import { LocalNode } from '../node/local-node.js';
import { testManager, type TestManager } from '../node/manager/manager-test-kit.js';
import { MemoryFleetStore } from '../testing/memory-fleet-store.js';
import { testCipher } from '../testing/test-cipher.js';
import type { NodeService } from '../node-contract/node-service.js';
import { forwardTo } from '../node-contract/forward-to.js';
import { openFleet, type Fleet } from './fleet.js';
import { nodeCapacity } from './node-heartbeat.js';

const GB = 1024 ** 3;
const code = (c: string) => (err: unknown) => err instanceof ForkdError && err.code === c;

describe('fleet: the node contract routed over nodes in this process (fakes underneath)', () => {
  const kits: TestManager[] = [];
  const nodes = new Map<string, NodeService>();
  const store = new MemoryFleetStore();
  let fleet: Fleet;
  let svc: NodeService;
  const beat = async (id: string, free?: number) => {
    const capacity = await nodeCapacity(nodes.get(id)!);
    await fleet.nodes.heartbeat({ id, url: `http://${id}.test`, token: `token-of-${id}-0123456789`, capacity: free === undefined ? capacity : { ...capacity, memoryFreeBytes: free } });
  };

  before(async () => {
    for (const id of ['node-a', 'node-b']) {
      const kit = await testManager();
      kits.push(kit);
      nodes.set(id, new LocalNode(kit.manager, kit.templates, { forget: async () => {}, set: async () => {}, rewound: async () => {} } as never));
    }
    fleet = openFleet({
      store,
      cipher: testCipher(),
      joinToken: 'fjt_test',
      deadlineMs: 60_000,
      connect: (url) => {
        const id = new URL(url).hostname.replace(/\.test$/, '');
        return { ...forwardTo(nodes.get(id)!), close() {} };
      },
    });
    svc = fleet.node;
    await beat('node-a');
    await beat('node-b');
  });
  after(async () => {
    fleet.close();
    for (const k of kits) await k.close();
  });

  test('a fractional overcommit still reports whole bytes (a heartbeat takes integers)', async () => {
    const kit = await testManager({ admission: { host: { memoryMb: 1000, cpus: 2 }, overcommit: { memory: 0.0166, cpus: 0 } } });
    try {
      const cap = await nodeCapacity(new LocalNode(kit.manager, kit.templates, { forget: async () => {}, set: async () => {}, rewound: async () => {} } as never));
      assert.ok(Number.isInteger(cap.memoryBytes) && Number.isInteger(cap.memoryFreeBytes), JSON.stringify(cap));
      assert.equal(NodeHeartbeatRequest.safeParse({ id: 'node-x', url: 'http://x.test', token: 'fnt_0123456789abcdef', capacity: cap }).success, true);
    } finally {
      await kit.close();
    }
  });

  test('a node reports what its admission has left; the fleet sees both nodes live', async () => {
    const cap = await nodeCapacity(nodes.get('node-a')!);
    assert.equal(cap.memoryBytes, 16384 * 1024 * 1024 * 4, 'host × the default overcommit (4)');
    assert.equal(cap.memoryFreeBytes, cap.memoryBytes);
    assert.deepEqual(cap.templates, ['base']);
    assert.deepEqual((await fleet.nodes.live()).map((n) => n.id), ['node-a', 'node-b']);
  });

  test('a heartbeat does not replace the client of a node (calls in flight on it would be cut)', async () => {
    const before = await fleet.nodes.client('node-a');
    await beat('node-a');
    await beat('node-a');
    assert.equal(await fleet.nodes.client('node-a'), before);
  });

  test('creates go to the node with the most room and are placed; calls by id reach that node', async () => {
    await beat('node-a', 8 * GB);
    await beat('node-b', 2 * GB);
    const s = await svc.create({ template: 'base', memoryMb: 512 });
    assert.equal(await store.placement('sandbox', s.id), 'node-a');
    assert.equal((await nodes.get('node-a')!.get(s.id)).id, s.id);
    await assert.rejects(nodes.get('node-b')!.get(s.id), code('NOT_FOUND'));
    assert.equal((await svc.get(s.id)).id, s.id);
    const snap = await svc.snapshot(s.id, { name: 'one' });
    assert.equal(await store.placement('snapshot', snap.id), 'node-a');
    const [f] = await svc.fork(snap.id, 1);
    assert.equal(await store.placement('sandbox', f!.id), 'node-a', 'a fork goes where its snapshot is');
    await svc.delete(f!.id);
    assert.equal(await store.placement('sandbox', f!.id), undefined);
    await assert.rejects(svc.get(f!.id), code('NOT_FOUND'));
  });

  test('a burst of creates spreads: memory placed since the last heartbeat counts', async () => {
    await beat('node-a', 3 * GB);
    await beat('node-b', 2 * GB);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await svc.create({ template: 'base', memoryMb: 1024 }));
    const where = await Promise.all(made.map((s) => store.placement('sandbox', s.id)));
    assert.deepEqual(where.sort(), ['node-a', 'node-a', 'node-a', 'node-b', 'node-b'], 'every node filled to what it reported, none past it');
    await assert.rejects(svc.create({ template: 'base', memoryMb: 1024 }), code('RESOURCE_EXHAUSTED'), 'no node has 1 GB left by this control plane\'s count');
    for (const s of made) await svc.delete(s.id);
  });

  test('list and templates gather every node; an id made behind the fleet\'s back is found once, then placed', async () => {
    await beat('node-a');
    await beat('node-b');
    const direct = await nodes.get('node-b')!.create({ template: 'base' });
    assert.ok((await svc.list()).some((s) => s.id === direct.id));
    assert.equal(await store.placement('sandbox', direct.id), undefined);
    assert.equal((await svc.get(direct.id)).id, direct.id);
    assert.equal(await store.placement('sandbox', direct.id), 'node-b');
    assert.deepEqual((await svc.templates()).map((t) => t.name), ['base']);
    await svc.delete(direct.id);
  });

  test('a draining node takes no creates; a silent one is unavailable and left out of lists', async () => {
    await beat('node-a');
    await beat('node-b');
    await store.setNodeState('node-a', 'draining');
    const s = await svc.create({ template: 'base' });
    assert.equal(await store.placement('sandbox', s.id), 'node-b');
    await store.setNodeState('node-a', 'active');
    const b = (await store.node('node-b'))!;
    await store.upsertNode({ ...b, lastSeenAt: new Date(Date.now() - 120_000).toISOString() });
    await assert.rejects(svc.get(s.id), code('UNAVAILABLE'));
    assert.ok(!(await svc.list()).some((x) => x.id === s.id));
    await beat('node-b');
    await svc.delete(s.id);
  });
});
