import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addressRuleError, NetworkRules } from './network.js';

test('address rules: IPv4 addresses and CIDRs only; names and IPv6 refused with why', () => {
  for (const ok of ['1.2.3.4', '0.0.0.0/0', '10.0.0.0/8', '203.0.113.7/32']) assert.equal(addressRuleError(ok), undefined, ok);
  assert.match(addressRuleError('*.example.com')!, /domain name rules are not supported yet/);
  assert.match(addressRuleError('pypi.org')!, /domain name rules are not supported yet/);
  assert.match(addressRuleError('::1')!, /IPv6/);
  for (const bad of ['1.2.3.4/33', '256.1.1.1', '1.2.3', '1.2.3.4/8/1', '']) assert.ok(addressRuleError(bad), bad);
});

test('the default network is none with no rules', () => {
  assert.deepEqual(NetworkRules.parse({}), { mode: 'none', allowOut: [], denyOut: [] });
  assert.equal(NetworkRules.safeParse({ mode: 'bridge' }).success, false);
  assert.equal(NetworkRules.safeParse({ mode: 'egress', allowOut: ['x.example.com'] }).success, false);
});

test('limits: bandwidth in [0.1, 100000] Mbit/s, connections a whole number ≥ 1, forced denials are rules', () => {
  assert.deepEqual(NetworkRules.parse({ mode: 'egress', bandwidthMbps: 0.5, maxConnections: 10, forcedDenyOut: ['203.0.113.0/24'] }), { mode: 'egress', allowOut: [], denyOut: [], bandwidthMbps: 0.5, maxConnections: 10, forcedDenyOut: ['203.0.113.0/24'] });
  for (const bad of [{ bandwidthMbps: 0 }, { bandwidthMbps: 0.01 }, { bandwidthMbps: 100_001 }, { maxConnections: 0 }, { maxConnections: 1.5 }, { forcedDenyOut: ['10.0.0.0/33'] }]) assert.equal(NetworkRules.safeParse({ mode: 'egress', ...bad }).success, false, JSON.stringify(bad));
});
