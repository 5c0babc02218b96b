import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../../shared/exec.js';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { waitFor } from '../../testing/helpers.js';

/** forkd's table as nft lists it, or '' when it is not there. */
async function listTable(table: string): Promise<string> {
  return (await exec('nft', ['list', 'table', 'inet', table], { allowFailure: true })).stdout;
}

describe("forkd's nftables table removed by someone else comes back without a restart", { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
  });
  after(async () => {
    await node?.dispose();
  });

  test('nft delete table: the table and the egress sandbox\'s chain and sets are made again within seconds', async () => {
    const table = node.config.net.table;
    const s = await node.manager.create({ template: 'base', network: { mode: 'egress', allowOut: ['203.0.113.0/24'], denyOut: [] } });
    const before = await listTable(table);
    const chain = /chain (sb_\w+) \{/.exec(before)?.[1];
    assert.ok(chain, before);
    await exec('nft', ['delete', 'table', 'inet', table]);
    assert.equal(await listTable(table), '');
    await waitFor(async () => (await listTable(table)).includes(`chain ${chain} {`), 5000, 'the table and the sandbox chain are back');
    await node.tableWatch.settled();
    const again = await listTable(table);
    assert.match(again, /203\.0\.113\.0\/24/, "the sandbox's allow set is back");
    assert.match(again, /chain fwd_sb \{/);
    await node.manager.delete(s.id);
  });
});
