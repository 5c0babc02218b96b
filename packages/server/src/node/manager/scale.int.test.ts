import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { createTestNode, hostFootprint, isRoot, mountsUnder, type TestNode } from '../../testing/test-node.js';
import { heldMounts } from '../network/netns-holder.js';
import { run } from '../../testing/helpers.js';

describe('many sandboxes', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
    // Warm-up: the first sandbox creates the cgroup parent, which stays.
    await node.manager.delete((await node.manager.create({})).id);
  });
  after(async () => node?.dispose());

  test('50 created concurrently, used and deleted leave nothing behind', async () => {
    const before = await hostFootprint(node, node.config.cgroupParent);
    const ids = await Promise.all(Array.from({ length: 50 }, () => node.manager.create({ memoryMb: 128 }).then((s) => s.id)));
    assert.equal(new Set(ids).size, 50);
    const during = await hostFootprint(node, node.config.cgroupParent);
    assert.equal(during.containers, before.containers + 50);
    assert.equal(during.guests, before.guests + 50);
    // The host's mount table holds none of theirs (runc and CRIU read it whole per operation): roots are
    // runc's own, network namespaces the holder's.
    assert.deepEqual(await mountsUnder(node.config.runDir), []);
    assert.equal((await heldMounts(join(node.config.runDir, 'netns'))).length, 50);
    const outs = await Promise.all(ids.map((id) => run(node.manager, id, ['hostname'])));
    assert.deepEqual(
      outs.map((o) => o.stdout.trim()),
      ids,
    );
    // Leave some work running so deletion has real processes to reap.
    await Promise.all(ids.map(async (id) => (await node.manager.spawn(id, { argv: ['sleep', '1000'] })).process.detach()));
    await Promise.all(ids.map((id) => node.manager.delete(id)));
    const afterAll = await hostFootprint(node, node.config.cgroupParent);
    assert.deepEqual(afterAll, before);
    assert.equal((await node.manager.list()).length, 0);
  });
});
