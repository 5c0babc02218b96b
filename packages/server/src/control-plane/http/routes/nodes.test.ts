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

test("nodes: a hostile node's heartbeats (garbage capacity, deep or huge bodies) are refused and the control plane serves on", async () => {
  const { heartbeat, call, app } = await fleetApp();
  for (const bad of [
    { memoryBytes: 1e308 },
    { memoryBytes: 2 ** 60 },
    { memoryFreeBytes: 1.5 },
    { poolFreeBytes: null },
    { cpus: 1e9 },
    { cpus: 'NaN' },
    { running: -1 },
    { paused: [1] },
    { templates: 'base' },
    { templates: [{}] },
    { templates: ['x'.repeat(65)] },
    { extra: { deep: [[[[]]]] } },
  ]) {
    const r = await heartbeat(beat('node-a', { capacity: { ...capacity, ...bad } }));
    assert.equal(r.json?.error?.code, 'INVALID_ARGUMENT', JSON.stringify(bad));
  }
  const deep = 200_000;
  assert.equal((await heartbeat('['.repeat(deep) + ']'.repeat(deep))).json.error.code, 'INVALID_ARGUMENT', 'a body nested 200,000 deep');
  assert.equal((await heartbeat(`{"capacity":${'{"a":'.repeat(deep)}1${'}'.repeat(deep)}}`)).json.error.code, 'INVALID_ARGUMENT');
  // Heartbeats are small: past 1 MiB it is refused before it is parsed (the general limit is 24 MiB).
  const t0 = performance.now();
  for (let i = 0; i < 20; i++) {
    const r = await heartbeat(beat('node-a', { pad: 'x'.repeat(2 * 1024 * 1024) }));
    assert.equal(r.json.error.code, 'INVALID_ARGUMENT');
    assert.equal(r.json.error.details.limitBytes, 1024 * 1024);
  }
  assert.ok(performance.now() - t0 < 10_000, 'refusing 20 oversized heartbeats is cheap');
  assert.equal((await heartbeat('x'.repeat(30 * 1024 * 1024), null)).json.error.code, 'UNAUTHENTICATED', 'without the join token the body is not read');
  // The largest heartbeat the schema allows still fits.
  const most = { ...capacity, memoryBytes: 2 ** 53 - 1, memoryFreeBytes: 2 ** 53 - 1, cpus: 100_000, templates: Array.from({ length: 10_000 }, (_, i) => `t${i}`.padEnd(64, 'x')) };
  assert.equal((await heartbeat(beat('node-b', { capacity: most }))).status, 200);
  assert.equal((await heartbeat(beat('node-a'))).status, 200);
  assert.equal((await app.request('/v1/health')).status, 200);
  const listed = (await call('GET', '/v1/nodes')).json.nodes as Array<{ id: string; capacity: typeof capacity }>;
  assert.deepEqual(listed.map((n) => n.id), ['node-a', 'node-b']);
  assert.deepEqual(listed[0]!.capacity, capacity);
  assert.equal(listed[1]!.capacity.templates.length, 10_000);
});
