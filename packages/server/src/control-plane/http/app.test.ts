import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { createApp } from './app.js';
import type { SandboxService } from './sandbox-service.js';

const info: SandboxInfo = {
  id: 'sbx-aaaaaaaaaaaa',
  template: 'base',
  state: 'running',
  limits: { memoryMb: 512, cpus: 1, pids: 1024 },
  env: {},
  metadata: {},
  createdAt: new Date(0).toISOString(),
  hostname: 'sbx-aaaaaaaaaaaa',
};

function fakeService(): SandboxService & { created: unknown[] } {
  const created: unknown[] = [];
  const missing = (id: string) => new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
  return {
    created,
    async create(req) {
      created.push(req);
      return info;
    },
    get(id) {
      if (id !== info.id) throw missing(id);
      return info;
    },
    list: () => [info],
    async delete(id) {
      if (id !== info.id) throw missing(id);
    },
    async guest(id) {
      throw missing(id);
    },
    async spawn(id) {
      throw missing(id);
    },
    async attach(id) {
      throw missing(id);
    },
    async usage(id) {
      throw missing(id);
    },
    templates: () => [{ name: 'base', createdAt: info.createdAt }],
    snapshot: async (id) => Promise.reject(missing(id)),
    timeline: (id) => {
      throw missing(id);
    },
    getSnapshot: (id) => {
      throw missing(id);
    },
    deleteSnapshot: async (id) => Promise.reject(missing(id)),
    pause: async (id) => Promise.reject(missing(id)),
    resume: async (id) => Promise.reject(missing(id)),
    rewind: async (id) => Promise.reject(missing(id)),
    fork: async (id) => Promise.reject(missing(id)),
    tree: (id) => {
      throw missing(id);
    },
    buildTemplate: async () => Promise.reject(new ForkdError('NOT_FOUND', 'template base not found')),
    deleteTemplate: async (name) => Promise.reject(new ForkdError('NOT_FOUND', `template ${name} not found`)),
  };
}

async function call(app: ReturnType<typeof createApp>, method: string, path: string, body?: string) {
  const r = await app.request(path, { method, body: body ?? null, headers: { 'content-type': 'application/json' } });
  return { status: r.status, json: (await r.json().catch(() => null)) as any };
}

test('create validates with the protocol schema and applies defaults', async () => {
  const svc = fakeService();
  const app = createApp(svc, silentLogger);
  const ok = await call(app, 'POST', '/v1/sandboxes', JSON.stringify({ memoryMb: 256 }));
  assert.equal(ok.status, 201);
  assert.deepEqual(svc.created[0], { template: 'base', memoryMb: 256 });
});

test('bad input is INVALID_ARGUMENT with a stable shape, never a 500', async () => {
  const app = createApp(fakeService(), silentLogger);
  for (const body of ['{nope', JSON.stringify({ memoryMb: -1 }), JSON.stringify({ template: '../etc' }), JSON.stringify({ bogus: 1 }), JSON.stringify({ cpus: 'many' })]) {
    const r = await call(app, 'POST', '/v1/sandboxes', body);
    assert.equal(r.status, 400, body);
    assert.equal(r.json.error.code, 'INVALID_ARGUMENT');
    assert.equal(typeof r.json.error.message, 'string');
  }
  const exec = await call(app, 'POST', `/v1/sandboxes/${info.id}/exec`, JSON.stringify({ cmd: ['a'], command: 'b' }));
  assert.equal(exec.json.error.code, 'INVALID_ARGUMENT');
  const noCmd = await call(app, 'POST', `/v1/sandboxes/${info.id}/exec`, JSON.stringify({}));
  assert.equal(noCmd.json.error.code, 'INVALID_ARGUMENT');
  const sel = await call(app, 'POST', `/v1/sandboxes/${info.id}/processes/abc/signal`, '{}');
  assert.equal(sel.json.error.code, 'INVALID_ARGUMENT');
  const nopath = await call(app, 'GET', `/v1/sandboxes/${info.id}/files`);
  assert.equal(nopath.json.error.code, 'INVALID_ARGUMENT');
  const badRewind = await call(app, 'POST', `/v1/sandboxes/${info.id}/rewind`, JSON.stringify({ snapshot: 'nope' }));
  assert.equal(badRewind.json.error.code, 'INVALID_ARGUMENT');
  const badFork = await call(app, 'POST', `/v1/sandboxes/${info.id}/fork`, JSON.stringify({ count: 1000 }));
  assert.equal(badFork.json.error.code, 'INVALID_ARGUMENT');
  const badName = await call(app, 'POST', `/v1/sandboxes/${info.id}/snapshots`, JSON.stringify({ name: 'a b/c' }));
  assert.equal(badName.json.error.code, 'INVALID_ARGUMENT');
});

test('unknown sandboxes and routes are NOT_FOUND', async () => {
  const app = createApp(fakeService(), silentLogger);
  assert.equal((await call(app, 'GET', '/v1/sandboxes/sbx-zzzzzzzzzzzz')).json.error.code, 'NOT_FOUND');
  assert.equal((await call(app, 'DELETE', '/v1/sandboxes/sbx-zzzzzzzzzzzz')).status, 404);
  assert.equal((await call(app, 'GET', '/v1/nope')).json.error.code, 'NOT_FOUND');
});

test('oversized bodies are refused', async () => {
  const app = createApp(fakeService(), silentLogger);
  const r = await app.request('/v1/sandboxes', { method: 'POST', body: 'x'.repeat(10), headers: { 'content-length': String(100 * 1024 * 1024) } });
  assert.equal(r.status, 413);
});
