import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CreateSandboxRequest, NetworkRules, SandboxInfo, TenantNetworkPolicy } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { networkGate } from './network-gate.js';

/** The calls the gate makes, recorded; a fake node for the logic only (the real path is e2e/network-policy.int). */
function fakeNode(parent?: NetworkRules) {
  const calls: string[] = [];
  const created: CreateSandboxRequest[] = [];
  const info = (id: string, network?: NetworkRules) => ({ id, ...(network ? { network } : {}) }) as SandboxInfo;
  const svc = {
    create: async (req: CreateSandboxRequest) => (created.push(req), info('sbx-new', req.network as NetworkRules | undefined)),
    get: async (id: string) => info(id, parent),
    getSnapshot: async () => ({ sandboxId: 'sbx-parent' }),
    fork: async (_s: string, count: number) => (calls.push(`fork ${count}`), Array.from({ length: count }, (_, i) => info(`sbx-f${i}`, parent))),
    setNetwork: async (id: string, rules: NetworkRules) => (calls.push(`setNetwork ${id} ${JSON.stringify(rules)}`), info(id, rules)),
  } as unknown as NodeService;
  return { svc, calls, created };
}

const source = (policy: TenantNetworkPolicy, template?: NetworkRules) => ({ tenant: async () => policy, template: async (name: string) => (name === 'py' ? template : undefined) });
const egress: NetworkRules = { mode: 'egress', allowOut: [], denyOut: [] };

test('create: the template default over the tenant default, capped; an explicit request over both', async () => {
  const n = fakeNode();
  const gate = networkGate(n.svc, source({ default: { mode: 'none', allowOut: [], denyOut: [] }, maxConnections: 9 }, { ...egress, denyOut: ['203.0.113.3'] }), 'acme');
  await gate.create({ template: 'py' });
  await gate.create({ template: 'base' });
  await gate.create({ template: 'py', network: { mode: 'egress', maxConnections: 2 } });
  assert.deepEqual(
    n.created.map((r) => r.network),
    [{ ...egress, denyOut: ['203.0.113.3'], maxConnections: 9 }, { mode: 'none', allowOut: [], denyOut: [] }, { ...egress, maxConnections: 2 }],
  );
});

test('fork: refused before anything is made when the parent breaks the policy; otherwise the forks get the capped rules', async () => {
  const denied = fakeNode(egress);
  await assert.rejects(networkGate(denied.svc, source({ egress: false }), 'acme').fork('sbx-parent', 2), { code: 'PERMISSION_DENIED' });
  assert.deepEqual(denied.calls, [], 'no fork made');

  const tightened = fakeNode(egress);
  const forks = await networkGate(tightened.svc, source({ denyOut: ['198.51.100.0/24'] }), 'acme').fork('snap-x', 2);
  assert.deepEqual(forks.map((f) => f.network?.forcedDenyOut), [['198.51.100.0/24'], ['198.51.100.0/24']]);
  assert.equal(tightened.calls.length, 3);

  const same = fakeNode(egress);
  await networkGate(same.svc, source({}), 'acme').fork('sbx-parent', 1);
  assert.deepEqual(same.calls, ['fork 1'], 'nothing to change');
});

test("setNetwork: capped, the tenant's denials put back; bad input INVALID_ARGUMENT before the node", async () => {
  const n = fakeNode();
  const gate = networkGate(n.svc, source({ denyOut: ['198.51.100.0/24'], maxBandwidthMbps: 10 }), 'acme');
  const r = await gate.setNetwork('sbx-a', { mode: 'egress', allowOut: ['0.0.0.0/0'] });
  assert.deepEqual(r.network, { ...egress, allowOut: ['0.0.0.0/0'], forcedDenyOut: ['198.51.100.0/24'], bandwidthMbps: 10 });
  await assert.rejects(gate.setNetwork('sbx-a', { mode: 'egress', bandwidthMbps: 11 }), { code: 'PERMISSION_DENIED' });
  await assert.rejects(gate.setNetwork('sbx-a', { mode: 'egress', maxConnections: 0 }), { code: 'INVALID_ARGUMENT' });
  assert.equal(n.calls.length, 1);
});
