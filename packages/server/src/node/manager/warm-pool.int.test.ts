import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';

describe('warm pool', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode({ warmPool: 2 });
    node.manager.startWarmPool();
    await node.manager.warmPool.settled();
  });
  after(async () => node?.dispose());

  test('create adopts a started sandbox, applies its limits and refills', async () => {
    const held = node.manager.warmPool.held();
    assert.equal(held.size, 2);
    const s = await node.manager.create({ memoryMb: 200, pids: 64 });
    assert.ok(held.has(s.id), 'came from the pool');
    assert.equal(s.state, 'running');
    assert.equal((await run(node.manager, s.id, ['hostname'])).stdout.trim(), s.id);
    const usage = await node.manager.usage(s.id);
    assert.equal(usage.memoryLimitBytes, 200 * 1024 * 1024);
    const pidsMax = await run(node.manager, s.id, 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max');
    assert.equal(pidsMax.stdout.trim(), '64');
    await node.manager.warmPool.settled();
    assert.equal(node.manager.warmPool.held().size, 2);
    assert.ok(!node.manager.warmPool.held().has(s.id));
    // Pool members are not user sandboxes.
    assert.deepEqual(
      node.manager.list().map((x) => x.id),
      [s.id],
    );
  });

  test('recovery keeps pool members and close removes them', async () => {
    await node.manager.recover();
    assert.equal(node.manager.warmPool.held().size, 2);
    const pooled = [...node.manager.warmPool.held()];
    await node.manager.close();
    const running = await node.runtime.list();
    for (const id of pooled) assert.ok(!running.includes(id), `${id} destroyed`);
  });
});
