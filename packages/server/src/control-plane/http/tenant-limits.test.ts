import { testCipher } from '../../testing/test-cipher.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ForkdError, Limits, type SandboxInfo, type SnapshotInfo } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { UNLIMITED } from '../quota/tenant-usage.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { createApp } from './app.js';
import { sandboxInfo } from '../../testing/sandbox-info.js';
import type { ClaimSandbox, NodeService } from '../../node-contract/index.js';

/** A node that takes a while to start a sandbox (so calls overlap) and records it at the claim, as the real one does. */
function slowNode(): NodeService {
  const boxes = new Map<string, SandboxInfo>();
  const snaps = new Map<string, SnapshotInfo>();
  let n = 0;
  const make = async (claim: ClaimSandbox | undefined, limits: SandboxInfo['limits']): Promise<SandboxInfo> => {
    const id = `sbx-${String(++n).padStart(12, '0')}`;
    await claim?.(id);
    const s: SandboxInfo = sandboxInfo(id, { state: 'creating', limits, createdAt: new Date().toISOString() });
    boxes.set(id, s);
    await sleep(30);
    s.state = 'running';
    return { ...s };
  };
  const get = (id: string) => {
    const s = boxes.get(id);
    if (!s) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
    return s;
  };
  const svc: Partial<NodeService> = {
    create: (req, claim) => make(claim, Limits.parse({ memoryMb: req.memoryMb, cpus: req.cpus })),
    get: async (id) => ({ ...get(id) }),
    list: async () => [...boxes.values()].map((s) => ({ ...s })),
    delete: async (id) => void boxes.delete(get(id).id),
    templates: async () => [{ name: 'base', createdAt: new Date(0).toISOString() }],
    timeline: async (id) => [...snaps.values()].filter((s) => s.sandboxId === get(id).id),
    getSnapshot: async (snapId) => snaps.get(snapId) ?? Promise.reject(new ForkdError('NOT_FOUND', 'no snapshot')),
    snapshot: async (id) => {
      const s = { id: `snap-${String(++n).padStart(12, '0')}`, sandboxId: get(id).id, createdAt: new Date().toISOString(), reason: 'manual', pinned: false } as unknown as SnapshotInfo;
      snaps.set(s.id, s);
      return s;
    },
    fork: async (source, count, claim) => Promise.all(Array.from({ length: count }, () => make(claim, get(source.startsWith('snap-') ? snaps.get(source)!.sandboxId : source).limits))),
    pause: async (id) => {
      get(id).state = 'paused';
      return get(id);
    },
    resume: async (id) => {
      await sleep(30);
      get(id).state = 'running';
      return get(id);
    },
  };
  return new Proxy(svc as NodeService, {
    get: (t, k) =>
      (t as unknown as Record<string | symbol, unknown>)[k] ??
      (() => {
        throw new Error(`unexpected call ${String(k)}`);
      }),
  });
}

async function setup(defaults = UNLIMITED) {
  const store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store, defaults), cipher: testCipher(), close: () => store.close() };
  const app = createApp({ svc: slowNode(), control, logger: silentLogger });
  const admin = (await control.keys.create({ format: 'forkd', admin: true }, undefined)).key;
  const acme = (await control.keys.create({ format: 'forkd', tenant: 'acme', admin: false }, undefined)).key;
  const beta = (await control.keys.create({ format: 'forkd', tenant: 'beta', admin: false }, undefined)).key;
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const r = await app.request(path, { method, body: body === undefined ? null : JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } });
    const text = await r.text();
    return { status: r.status, json: text ? JSON.parse(text) : undefined };
  };
  return { admin, acme, beta, call };
}

test('admin keys set any tenant\'s limits; other keys read their own only and set none', async () => {
  const { admin, acme, call } = await setup();
  const denied = await call(acme, 'PUT', '/v1/tenants/acme/limits', { runningSandboxes: 100 });
  assert.equal(denied.status, 403);
  assert.equal(denied.json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call(acme, 'GET', '/v1/tenants/beta/limits')).json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call(admin, 'PUT', '/v1/tenants/acme/limits', { runningSandboxes: -1 })).json.error.code, 'INVALID_ARGUMENT');
  assert.equal((await call(admin, 'PUT', '/v1/tenants/acme/limits', { sandboxes: 1 })).json.error.code, 'INVALID_ARGUMENT');
  assert.equal((await call(admin, 'GET', '/v1/tenants/Not_A_Tenant/limits')).json.error.code, 'INVALID_ARGUMENT');
  const set = await call(admin, 'PUT', '/v1/tenants/acme/limits', { runningSandboxes: 2, memoryMb: null });
  assert.equal(set.status, 200);
  assert.deepEqual(set.json.overrides, { runningSandboxes: 2, memoryMb: null });
  const own = await call(acme, 'GET', '/v1/tenants/acme/limits');
  assert.equal(own.json.limits.runningSandboxes, 2);
  assert.deepEqual(own.json.usage, { runningSandboxes: 0, memoryMb: 0, cpus: 0, snapshots: 0, diskMb: 0 });
});

test('running sandboxes: concurrent creates race for the last slot and exactly one wins; a neighbour is unaffected; a delete frees the slot', async () => {
  const { admin, acme, beta, call } = await setup();
  await call(admin, 'PUT', '/v1/tenants/acme/limits', { runningSandboxes: 2 });
  assert.equal((await call(acme, 'POST', '/v1/sandboxes', {})).status, 201);
  const raced = await Promise.all(Array.from({ length: 5 }, () => call(acme, 'POST', '/v1/sandboxes', {})));
  assert.equal(raced.filter((r) => r.status === 201).length, 1);
  for (const r of raced.filter((r) => r.status !== 201)) {
    assert.equal(r.status, 429);
    assert.equal(r.json.error.code, 'RESOURCE_EXHAUSTED');
    assert.equal(r.json.error.details.limit, 'runningSandboxes');
    assert.match(r.json.error.message, /runningSandboxes/);
  }
  assert.equal((await call(beta, 'POST', '/v1/sandboxes', {})).status, 201);
  const usage = (await call(acme, 'GET', '/v1/tenants/acme/limits')).json.usage;
  assert.equal(usage.runningSandboxes, 2);
  const mine = (await call(acme, 'GET', '/v1/sandboxes')).json.sandboxes;
  assert.equal((await call(acme, 'DELETE', `/v1/sandboxes/${mine[0].id}`)).status, 204);
  assert.equal((await call(acme, 'POST', '/v1/sandboxes', {})).status, 201);
});

test('memory, CPUs, fork of N, snapshots, resume and disk are counted against the server defaults and overrides', async () => {
  const { admin, acme, call } = await setup({ ...UNLIMITED, memoryMb: 2048 });
  const a = (await call(acme, 'POST', '/v1/sandboxes', { memoryMb: 1024 })).json;
  const over = await call(acme, 'POST', '/v1/sandboxes', { memoryMb: 1536 });
  assert.equal(over.json.error.details.limit, 'memoryMb');
  // A fork of 2 × 1024 MB is refused whole; a fork of 1 fits.
  assert.equal((await call(acme, 'POST', `/v1/sandboxes/${a.id}/fork`, { count: 2 })).json.error.details.limit, 'memoryMb');
  assert.equal((await call(acme, 'GET', '/v1/sandboxes')).json.sandboxes.length, 1, 'nothing made by a refused fork');
  const [f] = (await call(acme, 'POST', `/v1/sandboxes/${a.id}/fork`, { count: 1 })).json.sandboxes;
  // Paused: memory back; a resume of it while another takes the room is refused.
  await call(acme, 'POST', `/v1/sandboxes/${f.id}/pause`);
  assert.equal((await call(acme, 'POST', '/v1/sandboxes', { memoryMb: 1024 })).status, 201);
  assert.equal((await call(acme, 'POST', `/v1/sandboxes/${f.id}/resume`)).json.error.details.limit, 'memoryMb');
  await call(admin, 'PUT', '/v1/tenants/acme/limits', { memoryMb: null, cpus: 2.5, snapshots: 1 });
  assert.equal((await call(acme, 'POST', `/v1/sandboxes/${f.id}/resume`)).json.error.details.limit, 'cpus');
  assert.equal((await call(acme, 'POST', `/v1/sandboxes/${a.id}/snapshots`, {})).status, 201);
  const snap2 = await call(acme, 'POST', `/v1/sandboxes/${a.id}/snapshots`, {});
  assert.equal(snap2.json.error.details.limit, 'snapshots');
  await call(admin, 'PUT', '/v1/tenants/acme/limits', { memoryMb: null, diskMb: 30720 });
  assert.equal((await call(acme, 'POST', `/v1/sandboxes/${f.id}/resume`)).status, 200);
  // Three sandboxes at the default 10240 MB each: the disk limit is reached.
  const disk = await call(acme, 'POST', '/v1/sandboxes', { memoryMb: 32 });
  assert.equal(disk.json.error.details.limit, 'diskMb');
  assert.equal((await call(acme, 'GET', '/v1/tenants/acme/limits')).json.usage.diskMb, 30720);
});
