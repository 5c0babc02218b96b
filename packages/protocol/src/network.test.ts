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
