import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import { ForkdError } from '@forkd/protocol';
import { openNode } from '../node.js';
import { silentLogger } from '../../shared/logger.js';

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
      (await node.manager.list()).map((x) => x.id),
      [s.id],
    );
  });

  // The cause of `runc update ... container does not exist` in template builds:
  // `forkd setup` (or a second serve) opened the daemon's state directory and its
  // recovery destroyed the pool's members, which have no record, as orphans.
  test('a second node on the same state directory is refused and leaves the pool alone', async () => {
    await node.manager.warmPool.settled();
    const pooled = [...node.manager.warmPool.held()];
    assert.equal(pooled.length, 2);
    await assert.rejects(openNode(node.config, silentLogger), (err: unknown) => err instanceof ForkdError && err.code === 'FAILED_PRECONDITION' && err.message.includes(`pid ${process.pid}`));
    for (const id of pooled) assert.equal((await node.runtime.state(id)).status, 'running', `${id} still running`);
  });

  test('a pool member destroyed behind the pool\'s back: create with limits starts one cold', async () => {
    await node.manager.warmPool.settled();
    const pooled = [...node.manager.warmPool.held()];
    for (const id of pooled) await node.runtime.destroy(id);
    const made = [];
    for (let i = 0; i < pooled.length; i++) {
      const s = await node.manager.create({ memoryMb: 300 });
      made.push(s.id);
      assert.equal((await run(node.manager, s.id, ['hostname'])).stdout.trim(), s.id);
      assert.equal((await node.manager.usage(s.id)).memoryLimitBytes, 300 * 1024 * 1024);
    }
    assert.ok(made.some((id) => pooled.includes(id)), 'a destroyed member was taken and replaced');
    for (const id of made) await node.manager.delete(id);
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
