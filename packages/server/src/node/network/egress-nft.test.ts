import { test } from 'node:test';
import assert from 'node:assert/strict';
import { exec } from '../../shared/exec.js';
import { isRoot } from '../../testing/test-node.js';
import { attachScript, tableScript } from './egress-nft.js';

test('an uplink forkd made forward is guarded: new connections routed from it are dropped unless published (DNAT); replies pass; nft accepts the script', async () => {
  const plain = tableScript('t', { dns: 1, http: 2, tls: 3 });
  assert.ok(!plain.includes('iifname "eth0"'), 'no guard when forkd did not turn forwarding on');
  const script = tableScript('t', { dns: 1, http: 2, tls: 3 }, [], 'eth0');
  const fwd = script.split('\n').filter((l) => l.startsWith('add rule inet t fwd_sb '));
  const guard = fwd.findIndex((l) => l === 'add rule inet t fwd_sb iifname "eth0" ct state new ct status & dnat == 0 drop');
  assert.ok(guard > fwd.findIndex((l) => l.includes('oifname @ifs ct state established,related accept')), fwd.join('\n'));
  assert.ok(guard < fwd.findIndex((l) => l.includes('iifname @ifs ct state established,related accept')), 'before the sandboxes\' own forwarding rules');
  if (!isRoot) return;
  // Check mode: parsed and validated by the kernel's nft, nothing applied.
  const full = script + attachScript('t', { ifname: 'fkv1', hostIp: '10.254.0.1' }, { mode: 'egress', allowOut: ['0.0.0.0/0'], denyOut: [] });
  await exec('nft', ['-c', '-f', '-'], { input: full });
});
