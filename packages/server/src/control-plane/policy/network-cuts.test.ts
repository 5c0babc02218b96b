import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NetworkRules, SandboxInfo, SetNetworkRequest } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { NetworkCuts } from './network-cuts.js';

function fakeNode(initial: NetworkRules): { svc: NodeService; calls: SetNetworkRequest[]; now: () => NetworkRules } {
  let net = initial;
  const calls: SetNetworkRequest[] = [];
  const svc = {
    get: async (id: string) => ({ id, network: net }) as unknown as SandboxInfo,
    setNetwork: async (id: string, r: SetNetworkRequest) => {
      calls.push(r);
      net = { mode: r.mode ?? 'none', allowOut: r.allowOut ?? [], denyOut: r.denyOut ?? [] };
      return { id, network: net } as unknown as SandboxInfo;
    },
  } as unknown as NodeService;
  return { svc, calls, now: () => net };
}

test('network cuts: cut on the first call, restored after the last, counted across concurrent calls', async () => {
  const rules: NetworkRules = { mode: 'egress', allowOut: ['203.0.113.1'], denyOut: [] };
  const n = fakeNode(rules);
  const cuts = new NetworkCuts();
  const [r1, r2] = await Promise.all([cuts.acquire(n.svc, 'sbx-1'), cuts.acquire(n.svc, 'sbx-1')]);
  assert.equal(n.now().mode, 'none');
  assert.equal(n.calls.length, 1, 'one cut for both');
  await r1();
  await r1();
  assert.equal(n.now().mode, 'none', 'still held by the second call (a release counts once)');
  await r2();
  assert.deepEqual(n.now(), rules, 'restored as it was');
  assert.ok(!cuts.active('sbx-1'));
});

test('network cuts: a sandbox without egress is left alone', async () => {
  const n = fakeNode({ mode: 'none', allowOut: [], denyOut: [] });
  const cuts = new NetworkCuts();
  await (await cuts.acquire(n.svc, 'sbx-1'))();
  assert.equal(n.calls.length, 0);
});
