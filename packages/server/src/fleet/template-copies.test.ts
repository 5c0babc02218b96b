import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ForkdError } from '@forkd/protocol';
import { forwardTo } from '../node-contract/forward-to.js';
import { FakeTransferNode, type FakeBlobs, type FakeTemplateBlobs } from '../testing/fake-transfer-node.js';
import { MemoryFleetStore } from '../testing/memory-fleet-store.js';
import { testCipher } from '../testing/test-cipher.js';
import { openFleet } from './fleet.js';

const GB = 2 ** 30;
const code = (c: ForkdError['code']) => (e: unknown) => e instanceof ForkdError && e.code === c;
const WEB = { name: 'web', id: 'tpl_web000000001', createdAt: new Date(0).toISOString(), warm: true };

/** Fake nodes a, b, c in a fleet; `a` holds template `web` and has `free.a` memory left, the others as `free` says. */
async function fleetOf(free: { a: number; b: number; c?: number }) {
  const blobs: FakeBlobs = new Map();
  const templateBlobs: FakeTemplateBlobs = new Map();
  const nodes = { a: new FakeTransferNode(blobs, templateBlobs), b: new FakeTransferNode(blobs, templateBlobs), c: new FakeTransferNode(blobs, templateBlobs) };
  nodes.a.templates.set('web', WEB);
  const store = new MemoryFleetStore();
  const fleet = openFleet({ store, cipher: testCipher(), joinToken: 'fjt_test', deadlineMs: 60_000, connect: (url) => ({ ...forwardTo(nodes[new URL(url).hostname.split('.')[0] as 'a' | 'b' | 'c'].service), close() {} }) });
  const beat = (id: 'a' | 'b' | 'c', memoryFreeBytes: number) =>
    fleet.nodes.heartbeat({ id, url: `http://${id}.test`, token: `fnt_token-of-${id}-0123456789`, capacity: { memoryBytes: 16 * GB, memoryFreeBytes, cpus: 4, poolFreeBytes: 10 * GB, running: 0, paused: 0, templates: [...nodes[id].templates.keys()] } });
  await beat('a', free.a);
  await beat('b', free.b);
  if (free.c !== undefined) await beat('c', free.c);
  return { nodes, store, fleet, svc: fleet.node, beat };
}

test('a create whose template\'s holders are full: the template is copied to a node with room, placed there, and the sandbox made there; the next create finds the copy', async () => {
  const { nodes, store, fleet, svc } = await fleetOf({ a: GB / 2, b: 8 * GB });
  try {
    const s = await svc.create({ template: 'web', memoryMb: 1024 });
    assert.equal(await store.placement('sandbox', s.id), 'b');
    assert.ok(nodes.b.sandboxes.has(s.id));
    assert.deepEqual(nodes.a.templateCalls, ['export:web']);
    assert.deepEqual(nodes.b.templateCalls, [`import:templates/web/${WEB.id}/template.json`]);
    assert.deepEqual(nodes.b.templates.get('web'), WEB, 'the same template (id) on b');
    assert.equal(await store.placement('template', 'web'), 'b', 'placed before b\'s next heartbeat lists it');
    const again = await svc.create({ template: 'web', memoryMb: 1024 });
    assert.equal(await store.placement('sandbox', again.id), 'b');
    assert.equal(nodes.b.templateCalls.length, 1, 'no second copy');
  } finally {
    fleet.close();
  }
});

test('a holder with room is used as it is: no copy', async () => {
  const { nodes, store, fleet, svc } = await fleetOf({ a: 4 * GB, b: 8 * GB });
  try {
    const s = await svc.create({ template: 'web', memoryMb: 1024 });
    assert.equal(await store.placement('sandbox', s.id), 'a', 'the holder, though b has more room');
    assert.deepEqual([...nodes.a.templateCalls, ...nodes.b.templateCalls], []);
  } finally {
    fleet.close();
  }
});

test('a burst of creates that need the same copy triggers one copy; every create lands', async () => {
  const { nodes, store, fleet, svc } = await fleetOf({ a: 0, b: 8 * GB });
  try {
    let open!: () => void;
    nodes.b.importGate = new Promise((r) => (open = r));
    const burst = Array.from({ length: 6 }, () => svc.create({ template: 'web', memoryMb: 512 }));
    await new Promise((r) => setTimeout(r, 20));
    open();
    const made = await Promise.all(burst);
    assert.deepEqual(await Promise.all(made.map((s) => store.placement('sandbox', s.id))), Array(6).fill('b'));
    assert.deepEqual(nodes.b.templateCalls, [`import:templates/web/${WEB.id}/template.json`], 'one import');
    assert.deepEqual(nodes.a.templateCalls, ['export:web'], 'one export');
  } finally {
    fleet.close();
  }
});

test('no node with room: RESOURCE_EXHAUSTED and nothing copied; an unknown template: NOT_FOUND', async () => {
  const { nodes, fleet, svc } = await fleetOf({ a: 0, b: GB / 4 });
  try {
    await assert.rejects(svc.create({ template: 'web', memoryMb: 1024 }), code('RESOURCE_EXHAUSTED'));
    await assert.rejects(svc.create({ template: 'nope' }), code('NOT_FOUND'));
    assert.deepEqual([...nodes.a.templateCalls, ...nodes.b.templateCalls], []);
  } finally {
    fleet.close();
  }
});

test('a copy that fails is RESOURCE_EXHAUSTED (its cause is not the tenant\'s to see) and leaves no placement; a holder that does not answer is passed for another', async () => {
  const { nodes, store, fleet, svc, beat } = await fleetOf({ a: 0, b: 8 * GB });
  try {
    nodes.b.failing.add('importTemplate');
    await assert.rejects(svc.create({ template: 'web', memoryMb: 1024 }), (e: unknown) => code('RESOURCE_EXHAUSTED')(e) && !String((e as Error).message).includes('fake node'));
    assert.equal(await store.placement('template', 'web'), undefined);
    assert.equal(nodes.b.sandboxes.size, 0);
    nodes.b.failing.clear();
    // c holds it too (and is full); a stops answering its exports.
    nodes.c.templates.set('web', WEB);
    await beat('c', 0);
    nodes.a.failing.add('exportTemplate');
    const s = await svc.create({ template: 'web', memoryMb: 1024 });
    assert.equal(await store.placement('sandbox', s.id), 'b');
    assert.deepEqual(nodes.c.templateCalls, ['export:web']);
  } finally {
    fleet.close();
  }
});

test('a template delete deletes every copy', async () => {
  const { nodes, store, fleet, svc, beat } = await fleetOf({ a: 0, b: 8 * GB });
  try {
    await svc.create({ template: 'web', memoryMb: 1024 });
    await beat('b', 8 * GB);
    await svc.deleteTemplate('web');
    assert.equal(nodes.a.templates.has('web'), false);
    assert.equal(nodes.b.templates.has('web'), false);
    assert.equal(await store.placement('template', 'web'), undefined);
    await assert.rejects(svc.create({ template: 'web' }), code('NOT_FOUND'));
  } finally {
    fleet.close();
  }
});

test('no live node holds the template: RESOURCE_EXHAUSTED with no live node at all, UNAVAILABLE while only silent nodes hold it', async () => {
  const { fleet, svc, store } = await fleetOf({ a: 4 * GB, b: 8 * GB });
  try {
    const old = new Date(Date.now() - 120_000).toISOString();
    const a = (await store.node('a'))!;
    await store.upsertNode({ ...a, lastSeenAt: old });
    await assert.rejects(svc.create({ template: 'web' }), code('UNAVAILABLE'), 'web is only on a, which went silent');
    await assert.rejects(svc.create({ template: 'nope' }), code('NOT_FOUND'));
    const b = (await store.node('b'))!;
    await store.upsertNode({ ...b, lastSeenAt: old });
    await assert.rejects(svc.create({ template: 'web' }), code('RESOURCE_EXHAUSTED'), 'no live node at all');
  } finally {
    fleet.close();
  }
});
