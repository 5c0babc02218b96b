import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../usage-error.js';
import { parseCreateArgs } from './create.js';
import { formatRules, parseNetworkArgs } from './network.js';
import { mergedPolicy, parseTenantNetworkArgs } from './tenant-network.js';
import { parseTemplateNetworkArgs } from './template-network.js';

test('create and network take --bandwidth and --max-connections', () => {
  assert.deepEqual(parseCreateArgs(['--network', 'egress', '--bandwidth', '8.5', '--max-connections', '20']).request, { network: { mode: 'egress', allowOut: [], denyOut: [], bandwidthMbps: 8.5, maxConnections: 20 } });
  assert.throws(() => parseCreateArgs(['--bandwidth', '8']), UsageError, 'needs --network egress');
  assert.throws(() => parseCreateArgs(['--network', 'egress', '--max-connections', '1.5']), UsageError);
  assert.deepEqual(parseNetworkArgs(['sbx-a', '--bandwidth', '4']).change, { mode: undefined, allowOut: [], denyOut: [], bandwidthMbps: 4 });
  assert.equal(formatRules({ mode: 'egress', allowOut: [], denyOut: [], forcedDenyOut: ['10.9.0.0/16'], bandwidthMbps: 4, maxConnections: 9 }), 'mode egress\nforced-deny-out 10.9.0.0/16\nbandwidth 4 Mbit/s\nmax-connections 9\n');
});

test('tenants network: changes merge over the current policy; unlimited and allow remove', () => {
  const a = parseTenantNetworkArgs(['acme', '--egress', 'deny', '--deny-out', '203.0.113.0/24', '--max-bandwidth', '10', '--default-network', 'egress']);
  assert.deepEqual(a.changes, { egress: false, denyOut: ['203.0.113.0/24'], maxBandwidthMbps: 10, default: { mode: 'egress', allowOut: [], denyOut: [] } });
  assert.deepEqual(mergedPolicy({ maxConnections: 5, maxBandwidthMbps: 3 }, a), { maxConnections: 5, maxBandwidthMbps: 10, egress: false, denyOut: ['203.0.113.0/24'], default: { mode: 'egress', allowOut: [], denyOut: [] } });
  const b = parseTenantNetworkArgs(['acme', '--egress', 'allow', '--max-connections', 'unlimited', '--no-default']);
  assert.deepEqual(mergedPolicy({ egress: false, maxConnections: 5, maxBandwidthMbps: 3, default: { mode: 'egress', allowOut: [], denyOut: [] } }, b), { maxBandwidthMbps: 3 });
  assert.deepEqual(mergedPolicy({ maxConnections: 5 }, parseTenantNetworkArgs(['acme', '--reset'])), {});
  assert.throws(() => parseTenantNetworkArgs(['acme', '--egress', 'maybe']), UsageError);
  assert.throws(() => parseTenantNetworkArgs(['Acme!']), UsageError);
});

test('template network: show, set with --mode, remove with --clear', () => {
  assert.deepEqual(parseTemplateNetworkArgs(['py']), { name: 'py', change: undefined, json: false });
  assert.deepEqual(parseTemplateNetworkArgs(['py', '--mode', 'egress', '--max-connections', '3']).change, { mode: 'egress', allowOut: [], denyOut: [], maxConnections: 3 });
  assert.equal(parseTemplateNetworkArgs(['py', '--clear']).change, null);
  assert.throws(() => parseTemplateNetworkArgs(['py', '--allow-out', '1.2.3.4']), UsageError);
  assert.throws(() => parseTemplateNetworkArgs(['py', '--clear', '--mode', 'none']), UsageError);
});
