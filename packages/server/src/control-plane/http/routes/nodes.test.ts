import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openFleet } from '../../../fleet/fleet.js';
import { forwardTo } from '../../../node-contract/forward-to.js';
import { fakeService, testApp } from '../app-test-kit.js';

const JOIN = 'fjt_join-token-of-this-test';
const capacity = { memoryBytes: 8 * 2 ** 30, memoryFreeBytes: 4 * 2 ** 30, cpus: 4, poolFreeBytes: 10 * 2 ** 30, running: 0, paused: 0, templates: ['base'] };
const beat = (id: string, extra: Record<string, unknown> = {}) => JSON.stringify({ id, url: `http://${id}.test:8081`, token: `fnt_token-of-${id}-0123456789`, capacity, ...extra });

async function fleetApp() {
  const t = await testApp(undefined, undefined, { fleet: (control) => openFleet({ store: control.store, cipher: control.cipher, joinToken: JOIN, deadlineMs: 60_000, connect: () => ({ ...forwardTo(fakeService()), close() {} }) }) });
  const heartbeat = (body: string, token: string | null = JOIN) => t.call('POST', '/v1/fleet/heartbeat', body, token);
  return { ...t, heartbeat };
}

test('nodes: a heartbeat with the join token registers a node; an API key, no token or a wrong one does not', async () => {
  const { heartbeat, call, admin } = await fleetApp();
  assert.equal((await heartbeat(beat('node-a'), null)).json.error.code, 'UNAUTHENTICATED');
  assert.equal((await heartbeat(beat('node-a'), 'fjt_wrong')).json.error.code, 'UNAUTHENTICATED');
  assert.equal((await heartbeat(beat('node-a'), admin)).json.error.code, 'UNAUTHENTICATED', 'an admin API key is not a join token');
  assert.deepEqual((await call('GET', '/v1/nodes')).json.nodes, []);
  const r = await heartbeat(beat('node-a'));
  assert.equal(r.status, 200);
  assert.equal(r.json.state, 'active');
  const [n] = (await call('GET', '/v1/nodes')).json.nodes;
  assert.equal(n.id, 'node-a');
  assert.deepEqual(n.capacity, capacity);
  assert.equal(JSON.stringify(n).includes('fnt_token'), false, 'the node token is never shown');
  assert.equal('sealedToken' in n, false);
});

test('nodes: heartbeats are validated as untrusted input', async () => {
  const { heartbeat } = await fleetApp();
  for (const bad of [
    beat('Node_A'),
    beat('node-a', { url: 'file:///etc/passwd' }),
    beat('node-a', { url: 'javascript:alert(1)' }),
    beat('node-a', { token: 'short' }),
    beat('node-a', { capacity: { ...capacity, memoryBytes: -1 } }),
    beat('node-a', { capacity: { ...capacity, templates: Array.from({ length: 20_000 }, () => 'x') } }),
    beat('node-a', { extra: true }),
    '{"id":',
  ]) {
    const r = await heartbeat(bad);
    assert.equal(r.json?.error?.code, 'INVALID_ARGUMENT', bad.slice(0, 80));
  }
});

test('nodes: admin keys only; drain marks it, rm forgets an empty node, unknown ids are NOT_FOUND', async () => {
  const { heartbeat, call, control } = await fleetApp();
  await heartbeat(beat('node-a'));
  await heartbeat(beat('node-b'));
  const tenant = (await control.keys.create({ format: 'forkd', tenant: 'acme', admin: false }, undefined)).key;
  assert.equal((await call('GET', '/v1/nodes', undefined, tenant)).json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call('POST', '/v1/nodes/node-a/drain', undefined, tenant)).json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call('DELETE', '/v1/nodes/node-a', undefined, tenant)).json.error.code, 'PERMISSION_DENIED');
  const d = await call('POST', '/v1/nodes/node-a/drain');
  assert.equal(d.json.node.state, 'draining');
  assert.deepEqual(d.json.moved, []);
  assert.equal((await heartbeat(beat('node-a'))).json.state, 'draining', 'a heartbeat does not undo a drain');
  await control.store.place('sandbox', 'sbx-aaaaaaaaaaaa', 'node-b');
  assert.equal((await call('DELETE', '/v1/nodes/node-b')).json.error.code, 'FAILED_PRECONDITION');
  assert.equal((await call('DELETE', '/v1/nodes/node-a')).status, 204);
  assert.deepEqual((await call('GET', '/v1/nodes')).json.nodes.map((n: { id: string }) => n.id), ['node-b']);
  assert.equal((await call('POST', '/v1/nodes/node-z/drain')).json.error.code, 'NOT_FOUND');
  assert.equal((await call('POST', '/v1/nodes/NOT_AN_ID/drain')).json.error.code, 'INVALID_ARGUMENT');
});

test('nodes: /metrics has each node\'s gauges (up, heartbeat age, room, placed sandboxes)', async () => {
  const { heartbeat, app, admin, control } = await fleetApp();
  await heartbeat(beat('node-a'));
  await heartbeat(beat('node-b'));
  await control.store.setNodeState('node-b', 'draining');
  await control.store.place('sandbox', 'sbx-aaaaaaaaaaaa', 'node-a');
  const text = await (await app.request('/metrics', { headers: { authorization: `Bearer ${admin}` } })).text();
  assert.match(text, /^forkd_node_up\{node="node-a",state="active"\} 1$/m);
  assert.match(text, /^forkd_node_up\{node="node-b",state="draining"\} 0$/m);
  assert.match(text, /^forkd_node_memory_free_bytes\{node="node-a",state="active"\} 4294967296$/m);
  assert.match(text, /^forkd_node_placed_sandboxes\{node="node-a",state="active"\} 1$/m);
  assert.match(text, /^forkd_node_heartbeat_age_seconds\{node="node-a",state="active"\} \d/m);
});
