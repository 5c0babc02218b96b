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
