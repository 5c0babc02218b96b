import { test } from 'node:test';
import assert from 'node:assert/strict';
import { firewallAccepts, firewallChanged } from './host-firewall.js';

test("a change to the iptables filter table is the firewall's; forkd's own table and other tables are not", () => {
  for (const l of ['add table ip filter', 'delete table ip filter', 'add chain ip filter FORWARD { type filter hook forward priority filter; policy drop; }', 'delete rule ip filter INPUT handle 3', 'insert rule ip filter INPUT iifname "x*" accept', 'flush chain ip6 filter INPUT']) {
    assert.equal(firewallChanged(l), true, l);
  }
  for (const l of ['add table inet forkd', 'delete table inet forkd', 'add rule inet forkd fwd_sb drop', 'add table ip filterx', 'add element inet forkd s { 1.2.3.4 }', '# new generation 5 by process 1 (iptables)', 'add table ip nat']) {
    assert.equal(firewallChanged(l), false, l);
  }
});

test('the accepts match only this node\'s links, are tagged, and let replies back in', () => {
  const rules = firewallAccepts('fkv');
  assert.deepEqual(rules.map((r) => r.chain), ['INPUT', 'FORWARD', 'FORWARD']);
  for (const r of rules) {
    assert.ok(r.match.includes('fkv+'));
    assert.ok(r.match.includes('--comment'));
    assert.deepEqual(r.match.slice(-2), ['-j', 'ACCEPT']);
  }
  assert.ok(rules[2]!.match.includes('RELATED,ESTABLISHED') && rules[2]!.match.includes('-o'));
});
