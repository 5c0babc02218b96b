import { test } from 'node:test';
import assert from 'node:assert/strict';
import { e2bCreateNetwork, e2bUpdateNetwork } from './e2b-network.js';

test("E2B's create options as forkd's network", () => {
  assert.equal(e2bCreateNetwork(undefined, undefined), undefined, "nothing asked: forkd's defaults");
  assert.equal(e2bCreateNetwork({}, true), undefined, 'internet access (what SDKs up to 2.50 always send): the defaults');
  assert.deepEqual(e2bCreateNetwork(undefined, false), { mode: 'none', allowOut: [], denyOut: [] });
  assert.deepEqual(e2bCreateNetwork({ allowOut: ['203.0.113.2'] }, false), { mode: 'egress', allowOut: ['203.0.113.2'], denyOut: ['0.0.0.0/0'] });
  assert.deepEqual(e2bCreateNetwork({ denyOut: ['203.0.113.0/24'], allowOut: ['203.0.113.2/32'] }, undefined), { mode: 'egress', allowOut: ['203.0.113.2/32'], denyOut: ['203.0.113.0/24'] });
  assert.throws(() => e2bCreateNetwork({ denyOut: ['::/0'] }, undefined), (e: Error & { status?: number }) => e.status === 400 && /IPv6/.test(e.message));
  assert.throws(() => e2bCreateNetwork({ egressProxy: { address: 'x:1' } }, undefined), (e: Error & { status?: number }) => e.status === 400);
});

test('E2B network update: replaces the rules ({} is full egress), keeps forkd-only limits', () => {
  const current = { mode: 'egress' as const, allowOut: [], denyOut: ['203.0.113.3'], bandwidthMbps: 8, maxConnections: 4 };
  assert.deepEqual(e2bUpdateNetwork({}, current), { mode: 'egress', allowOut: [], denyOut: [], bandwidthMbps: 8, maxConnections: 4 });
  assert.deepEqual(e2bUpdateNetwork({ allow_internet_access: false }, current), { mode: 'none', allowOut: [], denyOut: [] });
  assert.deepEqual(e2bUpdateNetwork({ denyOut: ['203.0.113.2'] }, undefined), { mode: 'egress', allowOut: [], denyOut: ['203.0.113.2'] });
});
