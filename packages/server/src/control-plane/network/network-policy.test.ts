import { test } from 'node:test';
import assert from 'node:assert/strict';
import { capNetwork, resolveNetwork, sameRules } from './network-policy.js';

const egress = { mode: 'egress' as const, allowOut: [], denyOut: [] };

test('precedence at create: request, then template default, then tenant default, then none', () => {
  const tpl = { ...egress, allowOut: ['203.0.113.2'] };
  const ten = { ...egress, denyOut: ['203.0.113.3'] };
  assert.deepEqual(resolveNetwork({ mode: 'egress', maxConnections: 4 }, tpl, { default: ten }), { ...egress, maxConnections: 4 });
  assert.deepEqual(resolveNetwork({ mode: 'none' }, tpl, { default: ten }), { mode: 'none', allowOut: [], denyOut: [] }, 'an explicit none is the request');
  assert.deepEqual(resolveNetwork(undefined, tpl, { default: ten }), tpl);
  assert.deepEqual(resolveNetwork(undefined, undefined, { default: ten }), ten);
  assert.equal(resolveNetwork(undefined, undefined, {}), undefined);
  assert.throws(() => resolveNetwork({ mode: 'egress', bandwidthMbps: -1 }, undefined, {}), (e: Error & { code?: string }) => e.code === 'INVALID_ARGUMENT' && /network\.bandwidthMbps/.test(e.message));
});

test('caps: egress forbidden, maxima as defaults and ceilings, forced denials merged', () => {
  assert.throws(() => capNetwork(egress, { egress: false }, 'acme'), (e: Error & { code?: string }) => e.code === 'PERMISSION_DENIED' && /tenant acme's network policy: egress is not allowed/.test(e.message));
  assert.deepEqual(capNetwork({ mode: 'none', allowOut: [], denyOut: [] }, { egress: false, maxConnections: 2 }, 'acme'), { mode: 'none', allowOut: [], denyOut: [] }, 'none needs no cap');
  assert.equal(capNetwork(undefined, { egress: false }, 'acme'), undefined);
  assert.deepEqual(capNetwork(egress, { maxBandwidthMbps: 10, maxConnections: 50 }, 'acme'), { ...egress, bandwidthMbps: 10, maxConnections: 50 }, 'the maxima when none asked');
  assert.deepEqual(capNetwork({ ...egress, bandwidthMbps: 5, maxConnections: 50 }, { maxBandwidthMbps: 10, maxConnections: 50 }, 'acme'), { ...egress, bandwidthMbps: 5, maxConnections: 50 });
  assert.throws(() => capNetwork({ ...egress, bandwidthMbps: 11 }, { maxBandwidthMbps: 10 }, 'acme'), (e: Error & { code?: string }) => e.code === 'PERMISSION_DENIED' && /bandwidthMbps 11 is over the maximum 10/.test(e.message));
  assert.throws(() => capNetwork({ ...egress, maxConnections: 51 }, { maxConnections: 50 }, 'acme'), /maxConnections 51 is over the maximum 50/);
  const allowAll = { ...egress, allowOut: ['0.0.0.0/0'], forcedDenyOut: ['198.51.100.0/24'] };
  assert.deepEqual(capNetwork(allowAll, { denyOut: ['203.0.113.0/24', '198.51.100.0/24'] }, 'acme'), { ...allowAll, forcedDenyOut: ['198.51.100.0/24', '203.0.113.0/24'] }, "the tenant's denials added once, the caller's kept");
  assert.deepEqual(capNetwork(egress, {}, 'acme'), egress, 'no policy: unchanged');
});

test('sameRules ignores key order', () => {
  assert.equal(sameRules({ ...egress, maxConnections: 2 }, { maxConnections: 2, ...egress }), true);
  assert.equal(sameRules(egress, { ...egress, maxConnections: 2 }), false);
  assert.equal(sameRules(undefined, undefined), true);
});
