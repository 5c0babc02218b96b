import { test } from 'node:test';
import assert from 'node:assert/strict';
import { networkRequest, ruleList } from './sandbox-network-form.js';

test('ruleList: one a line or comma-separated, blanks dropped', () => {
  assert.deepEqual(ruleList(' example.com\n\n*.a.org, 10.0.0.0/8 ,'), ['example.com', '*.a.org', '10.0.0.0/8']);
  assert.deepEqual(ruleList(''), []);
});

test("networkRequest: the form's mode and rules; what it does not show (forced denials, limits) sent back as it was", () => {
  const current = { mode: 'egress' as const, allowOut: ['a.com'], denyOut: [], forcedDenyOut: ['evil.com'], maxConnections: 5 };
  assert.deepEqual(networkRequest(current, 'none', 'b.com', 'c.com\nd.com'), { mode: 'none', allowOut: ['b.com'], denyOut: ['c.com', 'd.com'], forcedDenyOut: ['evil.com'], maxConnections: 5 });
  assert.deepEqual(networkRequest(undefined, 'egress', '', ''), { mode: 'egress', allowOut: [], denyOut: [] });
});
