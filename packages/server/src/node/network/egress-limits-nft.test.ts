import { test } from 'node:test';
import assert from 'node:assert/strict';
import { limitsAttachScript, limitsDetachScript, uploadRate } from './egress-limits-nft.js';

const a = { ifname: 'fkv7', hostIp: '10.254.0.7' };

test('a sandbox limits chain: forced denials first, then the upload policer, then the connection count', () => {
  const s = limitsAttachScript('t', a, { mode: 'egress', allowOut: [], denyOut: [], forcedDenyOut: ['203.0.113.0/24', 'b.test', '*.evil.test'], bandwidthMbps: 8, maxConnections: 3 });
  const rules = s.split('\n').filter((l) => l.startsWith('add rule'));
  assert.deepEqual(rules, [
    'add rule inet t lim_fkv7 ip daddr @lim_fkv7_deny drop',
    'add rule inet t lim_fkv7 limit rate over 1000000 bytes/second burst 100000 bytes drop',
    'add rule inet t lim_fkv7 ct state new ct count over 3 drop',
  ]);
  // Names are not nft's to resolve (that failed the whole transaction: a tenant forcing a name broke every create).
  assert.match(s, /add element inet t lim_fkv7_deny \{ 203\.0\.113\.0\/24 \}/);
  assert.match(s, /add element inet t limits \{ "fkv7" : goto lim_fkv7 \}/);
});

test('no limits: only the (empty) forced-deny rule; the detach script removes whatever is there', () => {
  const s = limitsAttachScript('t', a, { mode: 'egress', allowOut: [], denyOut: [] });
  assert.equal(s.split('\n').filter((l) => l.startsWith('add rule')).length, 1);
  assert.doesNotMatch(s, /add element inet t lim_fkv7_deny/);
  assert.match(limitsDetachScript('t', a), /delete chain inet t lim_fkv7\ndelete set inet t lim_fkv7_deny/);
  assert.deepEqual(uploadRate(0.1), { bytesPerSecond: 12500, burstBytes: 65536 });
});
