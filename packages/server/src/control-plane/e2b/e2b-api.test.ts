import { testCipher } from '../../testing/test-cipher.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import type { ClaimSandbox, NodeService } from '../../node-contract/index.js';
import { silentLogger } from '../../shared/logger.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { AccessTokens } from './access-tokens.js';
import { createE2bApi } from './e2b-api.js';
import { e2bContext } from './e2b-context.js';

/** Just enough of a node for the control-plane routes; anything else is a test failure. */
function fakeNode(calls: Array<[string, unknown]> = []): NodeService {
  const boxes = new Map<string, SandboxInfo>();
  let n = 0;
  const missing = (id: string) => new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
  const get = (id: string) => {
    const s = boxes.get(id);
    if (!s) throw missing(id);
    return s;
  };
  const impl: Partial<NodeService> = {
    async create(req, claim?: ClaimSandbox) {
      const id = `sbx-${String(++n).padStart(12, 'a')}`;
      await claim?.(id);
      const s: SandboxInfo = { id, template: req.template ?? 'base', state: 'running', limits: { memoryMb: 512, cpus: 1, pids: 1024, diskMb: 100 }, env: req.env ?? {}, metadata: req.metadata ?? {}, createdAt: new Date(Date.now() + n).toISOString(), hostname: id, ...(req.timeoutSeconds ? { expiresAt: new Date(Date.now() + req.timeoutSeconds * 1000).toISOString() } : {}), ...(req.onTimeout ? { onTimeout: req.onTimeout } : {}), ...(req.timeoutPauseMemory === false ? { timeoutPauseMemory: false as const } : {}) };
      boxes.set(id, s);
      return s;
    },
    get: async (id) => get(id),
    list: async () => [...boxes.values()],
    templates: async () => [{ name: 'base', createdAt: new Date(0).toISOString() }],
    delete: async (id) => void (get(id), boxes.delete(id)),
    setTimeout: async (id, seconds) => {
      const s = { ...get(id), expiresAt: new Date(Date.now() + seconds * 1000).toISOString() };
      boxes.set(id, s);
      return s;
    },
    pause: async (id, opts) => {
      calls.push(['pause', opts]);
      const s = { ...get(id), state: 'paused' as const };
      boxes.set(id, s);
      return s;
    },
    resume: async (id, opts) => {
      calls.push(['resume', opts]);
      const s = { ...get(id), state: 'running' as const };
      boxes.set(id, s);
      return s;
    },
    // Every snapshot is one of the first sandbox's.
    getSnapshot: async (snapId) => ({ id: snapId, sandboxId: `sbx-${'1'.padStart(12, 'a')}`, createdAt: new Date().toISOString(), frozenMs: 1, sizeBytes: 1, pinned: false, reason: 'manual' }),
    // A snapshot's fork: its parent's env under the fork's own (see ForkOptions).
    fork: async (source, count, claim, opts) => {
      calls.push(['fork', { source, count, opts }]);
      const id = `sbx-${String(++n).padStart(12, 'a')}`;
      await claim?.(id);
      const s: SandboxInfo = { id, template: 'base', state: 'running', limits: { memoryMb: 512, cpus: 1, pids: 1024, diskMb: 100 }, env: { PARENT: '1', ...opts?.env }, metadata: opts?.metadata ?? { parent: 'meta' }, createdAt: new Date(Date.now() + n).toISOString(), hostname: id, forkedFrom: source };
      boxes.set(id, s);
      return [s];
    },
  };
  return new Proxy(impl as NodeService, {
    get: (t, k) => (k in t ? t[k as keyof NodeService] : () => Promise.reject(new Error(`fake node: ${String(k)} not expected`))),
  });
}

async function harness(sandboxDomain?: string) {
  const store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
  const key = (await control.keys.create({ format: 'e2b', tenant: 'acme', admin: false }, undefined)).key;
  const other = (await control.keys.create({ format: 'e2b', tenant: 'other', admin: false }, undefined)).key;
  const calls: Array<[string, unknown]> = [];
  const ctx = e2bContext(fakeNode(calls), control, silentLogger, new AccessTokens(Buffer.alloc(32, 1)), sandboxDomain);
  const app = createE2bApi(ctx);
  const call = async (method: string, path: string, body?: unknown, k: string | null = key) => {
    const r = await app.request(path, { method, headers: { ...(k ? { 'x-api-key': k } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) });
    const text = await r.text();
    return { status: r.status, headers: r.headers, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  return { call, calls, store, other, close: () => (ctx.lifetimes.close(), store.close()) };
}

test('error bodies carry the numeric code the SDK branches on', async () => {
  const h = await harness();
  try {
    assert.deepEqual((await h.call('GET', '/v2/sandboxes', undefined, null)).body, { code: 401, message: 'an API key is required (Authorization: Bearer KEY or X-API-Key: KEY)' });
    for (const [m, p] of [['GET', '/sandboxes/sbx-zzzzzzzzzzzz'], ['DELETE', '/sandboxes/nonexisting'], ['POST', '/sandboxes/sbx-zzzzzzzzzzzz/pause'], ['POST', '/v2/sandboxes/sbx-zzzzzzzzzzzz/connect']] as const) {
      const r = await h.call(m, p, m === 'POST' ? {} : undefined);
      assert.equal(r.status, 404, `${m} ${p}`);
      assert.equal((r.body as { code: number }).code, 404);
    }
    assert.deepEqual((await h.call('GET', '/templates/aliases/base')).body, { templateID: 'base', public: true });
    assert.equal((await h.call('GET', '/templates/aliases/nope')).status, 404);
    const bad = await h.call('POST', '/v2/sandboxes', { templateID: 'base', network: { rules: { 'example.com': [{ transform: {} }] } } });
    assert.equal(bad.status, 400);
    assert.equal((bad.body as { code: number }).code, 400);
    const badRule = await h.call('POST', '/v2/sandboxes', { templateID: 'base', network: { denyOut: ['10.0.0.0/33'] } });
    assert.equal(badRule.status, 400);
    assert.match((badRule.body as { message: string }).message, /network\.denyOut\.0: 10\.0\.0\.0\/33/);
  } finally {
    h.close();
  }
});

test('with sandbox hosts over HTTPS the SDK is told their domain; every sandbox has a traffic token of its own, stable across connects', async () => {
  const h = await harness('sbx.example.test');
  try {
    const a = (await h.call('POST', '/v2/sandboxes', { templateID: 'base' })).body as { sandboxID: string; envdAccessToken: string; trafficAccessToken: string; domain: string };
    const b = (await h.call('POST', '/v2/sandboxes', { templateID: 'base' })).body as { trafficAccessToken: string };
    assert.equal(a.domain, 'sbx.example.test');
    assert.match(a.trafficAccessToken, /^[0-9a-f]{32}$/);
    assert.notEqual(a.trafficAccessToken, a.envdAccessToken, 'the traffic token opens ports, not envd');
    assert.notEqual(a.trafficAccessToken, b.trafficAccessToken);
    assert.equal(((await h.call('GET', `/sandboxes/${a.sandboxID}`)).body as { domain: string }).domain, 'sbx.example.test');
    const again = (await h.call('POST', `/sandboxes/${a.sandboxID}/connect`, { timeout: 60 })).body as { trafficAccessToken: string; domain: string };
    assert.deepEqual([again.trafficAccessToken, again.domain], [a.trafficAccessToken, 'sbx.example.test']);
    // forkd's port proxy always wants a credential: E2B's restricted public traffic is what it does anyway.
    assert.equal((await h.call('POST', '/v2/sandboxes', { templateID: 'base', network: { allowPublicTraffic: false } })).status, 201);
  } finally {
    h.close();
  }
});

test('create, get, pause (409 when paused), connect (201 resumed, 200 running), kill; other tenants see nothing', async () => {
  const h = await harness();
  try {
    const c = await h.call('POST', '/v2/sandboxes', { templateID: 'base', metadata: { k: 'v' }, envVars: { FOO: 'bar' }, timeout: 120, autoPause: true, autoResume: { enabled: true } });
    assert.equal(c.status, 201);
    const sb = c.body as { sandboxID: string; envdAccessToken: string; envdVersion: string; clientID: string; domain: null };
    assert.match(sb.envdAccessToken, /^[0-9a-f]{32}$/);
    assert.equal(sb.domain, null, 'no sandbox hosts served: the SDK keeps its own E2B_DOMAIN');
    const d = (await h.call('GET', `/sandboxes/${sb.sandboxID}`)).body as Record<string, unknown>;
    assert.deepEqual(d.metadata, { k: 'v' });
    assert.deepEqual(d.lifecycle, { onTimeout: 'pause', autoResume: true });
    assert.equal(d.envdAccessToken, sb.envdAccessToken);
    assert.equal((await h.call('GET', `/sandboxes/${sb.sandboxID}`, undefined, h.other)).status, 404);
    assert.equal((await h.call('POST', `/sandboxes/${sb.sandboxID}/pause`)).status, 204);
    assert.deepEqual(h.calls.at(-1), ['pause', { memory: true }]);
    const again = await h.call('POST', `/sandboxes/${sb.sandboxID}/pause`);
    assert.equal(again.status, 409);
    assert.equal((again.body as { code: number }).code, 409);
    // A paused sandbox's /timeout fails, so the oldest SDKs fall through to /resume.
    assert.equal((await h.call('POST', `/sandboxes/${sb.sandboxID}/timeout`, { timeout: 30 })).status, 404);
    const resumed = await h.call('POST', `/sandboxes/${sb.sandboxID}/connect`, { timeout: 60 });
    assert.equal(resumed.status, 201);
    assert.equal((resumed.body as { envdAccessToken: string }).envdAccessToken, sb.envdAccessToken);
    const endAt = ((await h.call('GET', `/sandboxes/${sb.sandboxID}`)).body as { endAt: string }).endAt;
    assert.equal((await h.call('POST', `/v2/sandboxes/${sb.sandboxID}/connect`, { timeout: 1 })).status, 200);
    assert.equal(((await h.call('GET', `/sandboxes/${sb.sandboxID}`)).body as { endAt: string }).endAt, endAt, 'connect never shortens');
    assert.equal((await h.call('DELETE', `/sandboxes/${sb.sandboxID}`)).status, 204);
    assert.equal((await h.call('DELETE', `/sandboxes/${sb.sandboxID}`)).status, 404);
    const audit = await h.store.queryAudit({ tenant: 'acme', limit: 100 });
    assert.ok(audit.some((r) => r.operation === 'E2B POST /v2/sandboxes' && r.code === 'OK' && r.status === 201));
    assert.ok(audit.some((r) => r.operation === 'E2B DELETE /sandboxes/:sandboxID' && r.code === 'NOT_FOUND' && r.status === 404));
  } finally {
    h.close();
  }
});

test('list: X-Next-Token on every page but the last', async () => {
  const h = await harness();
  try {
    for (let i = 0; i < 3; i++) await h.call('POST', '/v2/sandboxes', { templateID: 'base', metadata: { run: 'x' } });
    const ids: string[] = [];
    let token: string | null = null;
    let pages = 0;
    do {
      const q = new URLSearchParams({ limit: '2', metadata: 'run=x', ...(token ? { nextToken: token } : {}) });
      const r = await h.call('GET', `/v2/sandboxes?${q}`);
      ids.push(...(r.body as { sandboxID: string }[]).map((s) => s.sandboxID));
      token = r.headers.get('x-next-token');
      pages++;
    } while (token);
    assert.equal(pages, 2);
    assert.equal(new Set(ids).size, 3);
  } finally {
    h.close();
  }
});

test('filesystem-only pause: pause memory false, connect memory false (reboot), autoPauseMemory false at timeout', async () => {
  const h = await harness();
  try {
    const sb = (await h.call('POST', '/v2/sandboxes', { templateID: 'base', timeout: 120 })).body as { sandboxID: string };
    assert.equal((await h.call('POST', `/sandboxes/${sb.sandboxID}/pause`, { memory: false })).status, 204);
    assert.deepEqual(h.calls.at(-1), ['pause', { memory: false }]);
    assert.equal((await h.call('POST', `/v2/sandboxes/${sb.sandboxID}/connect`, { memory: false })).status, 201);
    assert.deepEqual(h.calls.at(-1), ['resume', { memory: false }]);
    assert.equal((await h.call('POST', `/sandboxes/${sb.sandboxID}/pause`, {})).status, 204);
    assert.equal((await h.call('POST', `/v2/sandboxes/${sb.sandboxID}/connect`, {})).status, 201);
    assert.deepEqual(h.calls.at(-1), ['resume', { memory: true }]);
    assert.equal((await h.call('POST', '/v2/sandboxes', { templateID: 'base', autoPause: true, autoPauseMemory: false, autoResume: { enabled: true } })).status, 400);
    // The timeout's pause keeps no memory when the create said so (the reserved metadata key is not shown).
    const t = (await h.call('POST', '/v2/sandboxes', { templateID: 'base', timeout: 1, autoPause: true, autoPauseMemory: false, metadata: { m: '1' } })).body as { sandboxID: string };
    assert.deepEqual(((await h.call('GET', `/sandboxes/${t.sandboxID}`)).body as { metadata: unknown }).metadata, { m: '1' });
    await new Promise((r) => setTimeout(r, 1300));
    assert.deepEqual(h.calls.at(-1), ['pause', { memory: false }]);
    assert.equal(((await h.call('GET', `/sandboxes/${t.sandboxID}`)).body as { state: string }).state, 'paused');
  } finally {
    h.close();
  }
});

test('create from a snapshot: a fork with the given metadata and envVars, listed by that metadata', async () => {
  const h = await harness();
  try {
    await h.call('POST', '/v2/sandboxes', { templateID: 'base', metadata: { parent: 'meta' } });
    const c = await h.call('POST', '/v2/sandboxes', { templateID: 'snap-aaaaaaaaaaaa', metadata: { who: 'fork' }, envVars: { FOO: 'bar' } });
    assert.equal(c.status, 201);
    const id = (c.body as { sandboxID: string; templateID: string }).sandboxID;
    assert.equal((c.body as { templateID: string }).templateID, 'snap-aaaaaaaaaaaa');
    const [op, args] = h.calls.at(-1)!;
    assert.equal(op, 'fork');
    const { opts } = args as { opts: { metadata: Record<string, string>; env: Record<string, string> } };
    assert.deepEqual(opts.env, { FOO: 'bar' });
    assert.equal(opts.metadata.who, 'fork');
    const listed = (await h.call('GET', `/v2/sandboxes?metadata=${encodeURIComponent('who=fork')}`)).body as Array<{ sandboxID: string; metadata: unknown }>;
    assert.deepEqual(listed.map((s) => s.sandboxID), [id]);
    assert.deepEqual(listed[0]!.metadata, { who: 'fork' });
    assert.equal(((await h.call('GET', `/v2/sandboxes?metadata=${encodeURIComponent('parent=meta')}`)).body as unknown[]).length, 1, 'the fork does not keep the snapshot\'s metadata');
  } finally {
    h.close();
  }
});
