import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { CreateSandboxRequest, NetworkRules, SandboxInfo, TenantNetworkPolicy } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { networkGate } from './network-gate.js';

/** The calls the gate makes, recorded; a fake node for the logic only (the real path is e2e/network-policy.int). */
function fakeNode(parent?: NetworkRules, templates = [{ name: 'py', id: 'tpl_py' }, { name: 'base', id: 'base' }]) {
  const calls: string[] = [];
  const created: CreateSandboxRequest[] = [];
  const info = (id: string, network?: NetworkRules) => ({ id, ...(network ? { network } : {}) }) as SandboxInfo;
  const svc = {
    create: async (req: CreateSandboxRequest) => (created.push(req), info('sbx-new', req.network as NetworkRules | undefined)),
    get: async (id: string) => info(id, parent),
    templates: async () => templates,
    deleteTemplate: async (name: string) => void calls.push(`deleteTemplate ${name}`),
    getSnapshot: async () => ({ sandboxId: 'sbx-parent' }),
    fork: async (_s: string, count: number) => (calls.push(`fork ${count}`), Array.from({ length: count }, (_, i) => info(`sbx-f${i}`, parent))),
    setNetwork: async (id: string, rules: NetworkRules) => (calls.push(`setNetwork ${id} ${JSON.stringify(rules)}`), info(id, rules)),
  } as unknown as NodeService;
  return { svc, calls, created };
}

/** acme's default for the template `py` it built (id tpl_py); kept by key, like the control store. */
const source = (policy: TenantNetworkPolicy, template?: NetworkRules) => {
  const defaults = new Map<string, NetworkRules>(template ? [['acme/tpl_py', template]] : []);
  return {
    defaults,
    tenant: async () => policy,
    template: async (key: string) => defaults.get(key),
    setTemplate: async (key: string, n: NetworkRules | undefined) => void (n ? defaults.set(key, n) : defaults.delete(key)),
  };
};
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

test("create: a template's default is its tenant's, of that template's id: not another tenant's, not a deleted template's of the same name", async () => {
  const none = { mode: 'none', allowOut: [], denyOut: [] };
  const src = source({ default: { mode: 'none', allowOut: [], denyOut: [] } }, egress);
  const other = fakeNode();
  await networkGate(other.svc, src, 'beta').create({ template: 'py' });
  const rebuilt = fakeNode(undefined, [{ name: 'py', id: 'tpl_other' }]);
  await networkGate(rebuilt.svc, src, 'acme').create({ template: 'py' });
  assert.deepEqual([other.created[0]?.network, rebuilt.created[0]?.network], [none, none]);

  const n = fakeNode();
  await networkGate(n.svc, src, 'acme').deleteTemplate('py');
  assert.deepEqual([n.calls, [...src.defaults.keys()]], [['deleteTemplate py'], []], 'the deleted template takes its default along');
});
