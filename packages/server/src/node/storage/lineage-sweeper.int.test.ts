import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../../shared/exec.js';
import { silentLogger } from '../../shared/logger.js';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { poolQuotas } from './quota-mode.js';
import { LineageSweeper } from './lineage-sweeper.js';

/** Level-1 qgroups (lineage groups) of the pool. */
async function lineageGroups(pool: string): Promise<string[]> {
  const out = (await exec('btrfs', ['qgroup', 'show', '--raw', pool])).stdout;
  return [...out.matchAll(/^(1\/\d+)\s/gm)].map((m) => m[1]!);
}

describe('lineage groups of deleted sandboxes', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let simple = false;
  before(async () => {
    node = await createTestNode();
    simple = (await poolQuotas(node.config.pool.mountPoint))?.mode === 'simple';
  });
  after(async () => node?.dispose());

  test('are swept once their subvolumes are removed and dropped, without a restart', async (t) => {
    if (!simple) return t.skip('simple quotas only (Linux ≥ 6.7)');
    const pool = node.config.pool.mountPoint;
    const sweeper = new LineageSweeper(pool, silentLogger, 50);
    const before = await lineageGroups(pool);
    const ids = await Promise.all([1, 2, 3].map(async () => (await node.manager.create({})).id));
    await node.manager.settled();
    const during = await lineageGroups(pool);
    assert.ok(during.length >= before.length + 3, `${before.length} groups before, ${during.length} with 3 sandboxes`);
    for (const id of ids) await node.manager.delete(id);
    await exec('btrfs', ['subvolume', 'sync', pool]);
    sweeper.removed();
    sweeper.removed();
    await new Promise((r) => setTimeout(r, 500));
    await sweeper.stop();
    assert.deepEqual((await lineageGroups(pool)).sort(), before.sort());
  });
});
