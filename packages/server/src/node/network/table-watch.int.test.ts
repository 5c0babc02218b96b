import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../../shared/exec.js';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';
import { FETCH_PY, startTestInternet, type TestInternet } from '../../testing/test-internet.js';
import { closeHostFirewall, firewallAccepts } from './host-firewall.js';

/** forkd's table as nft lists it, or '' when it is not there. */
async function listTable(table: string): Promise<string> {
  return (await exec('nft', ['list', 'table', 'inet', table], { allowFailure: true })).stdout;
}

describe("forkd's nftables table removed by someone else comes back without a restart", { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let internet: TestInternet;
  // A host with an iptables filter table of its own (a firewall, Docker) is not touched by this test's reloads.
  let hostFirewall = false;
  before(async () => {
    hostFirewall = (await exec('nft', ['list', 'table', 'ip', 'filter'], { allowFailure: true })).code === 0;
    internet = await startTestInternet();
    node = await createTestNode();
  });
  after(async () => {
    await node?.dispose();
    await internet?.close();
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

  test("a host firewall's iptables chains that drop sandbox links: forkd's accepts go first, and come back after a reload", { skip: hostFirewall && 'the host has an iptables filter table of its own' }, async () => {
    const prefix = node.config.net.ifPrefix;
    const server = '203.0.113.2';
    const reaches = async (id: string) => (await run(node.manager, id, ['python3', '-c', FETCH_PY, `http://${server}:8080/`])).stdout.trim() === `hello from ${server}`;
    const present = async () => {
      for (const { chain, match } of firewallAccepts(prefix)) if ((await exec('iptables', ['-w', '5', '-C', chain, ...match], { allowFailure: true })).code !== 0) return false;
      return true;
    };
    // A default-deny firewall, narrowed to this node's links so the host's own traffic is untouched.
    const firewall = `*filter\n:INPUT ACCEPT [0:0]\n:FORWARD ACCEPT [0:0]\n:OUTPUT ACCEPT [0:0]\n-A INPUT -i ${prefix}+ -j DROP\n-A FORWARD -i ${prefix}+ -j DROP\nCOMMIT\n`;
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress' } });
    try {
      assert.equal(await reaches(s.id), true);
      await exec('iptables-restore', [], { input: firewall });
      await waitFor(present, 5000, "forkd's accepts in the new iptables chains");
      assert.equal(await reaches(s.id), true, 'through the firewall');
      // A reload (ufw, firewalld, a Docker restart) writes the chains again without forkd's rules.
      await exec('iptables-restore', [], { input: firewall });
      await waitFor(present, 5000, "forkd's accepts back after the reload");
      assert.equal(await reaches(s.id), true, 'through the reloaded firewall');
      // Without them the firewall drops the sandbox's traffic: the accepts are what let it through.
      await node.tableWatch.close();
      await closeHostFirewall(prefix);
      assert.equal(await present(), false);
      assert.equal(await reaches(s.id), false, 'dropped by the firewall without forkd\'s accepts');
    } finally {
      await exec('nft', ['delete', 'table', 'ip', 'filter'], { allowFailure: true });
      await node.manager.delete(s.id);
    }
  });
});
