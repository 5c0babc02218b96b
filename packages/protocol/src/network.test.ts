import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressRuleError, isDomainRule, NetworkRules } from './network.js';

test('rules: IPv4 addresses, CIDRs and domain names; IPv6 and malformed names refused with why', () => {
  for (const ok of ['1.2.3.4', '0.0.0.0/0', '10.0.0.0/8', '203.0.113.7/32', '*.example.com', 'pypi.org', 'a.test.', 'x_y.b-c.example']) assert.equal(addressRuleError(ok), undefined, ok);
  for (const r of ['*.example.com', 'pypi.org']) assert.equal(isDomainRule(r), true, r);
  for (const r of ['1.2.3.4', '10.0.0.0/8']) assert.equal(isDomainRule(r), false, r);
  assert.match(addressRuleError('localhost')!, /two labels/);
  for (const bad of ['ex ample.com', '*example.com', 'a.*.com', '-a.com', 'a..com', `${'a'.repeat(64)}.com`]) assert.ok(addressRuleError(bad), bad);
  assert.match(addressRuleError('::1')!, /IPv6/);
  for (const bad of ['1.2.3.4/33', '256.1.1.1', '1.2.3', '1.2.3.4/8/1', '']) assert.ok(addressRuleError(bad), bad);
});

test('the default network is none with no rules', () => {
  assert.deepEqual(NetworkRules.parse({}), { mode: 'none', allowOut: [], denyOut: [] });
  assert.equal(NetworkRules.safeParse({ mode: 'bridge' }).success, false);
  assert.equal(NetworkRules.safeParse({ mode: 'egress', allowOut: ['x.example.com'] }).success, true);
  assert.equal(NetworkRules.safeParse({ mode: 'egress', allowOut: ['x..com'] }).success, false);
});

test('limits: bandwidth in [0.1, 100000] Mbit/s, connections a whole number ≥ 1, forced denials are rules', () => {
  assert.deepEqual(NetworkRules.parse({ mode: 'egress', bandwidthMbps: 0.5, maxConnections: 10, forcedDenyOut: ['203.0.113.0/24'] }), { mode: 'egress', allowOut: [], denyOut: [], bandwidthMbps: 0.5, maxConnections: 10, forcedDenyOut: ['203.0.113.0/24'] });
  for (const bad of [{ bandwidthMbps: 0 }, { bandwidthMbps: 0.01 }, { bandwidthMbps: 100_001 }, { maxConnections: 0 }, { maxConnections: 1.5 }, { forcedDenyOut: ['10.0.0.0/33'] }]) assert.equal(NetworkRules.safeParse({ mode: 'egress', ...bad }).success, false, JSON.stringify(bad));
});
