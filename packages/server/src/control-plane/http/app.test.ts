import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CODES, ForkdError, type SandboxInfo } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { waitFor } from '../../testing/helpers.js';
import { sandboxInfo } from '../../testing/sandbox-info.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { AuthThrottle } from '../auth/auth-throttle.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { createApp } from './app.js';
import { ROUTES } from './routes/index.js';
import type { ClaimSandbox, NodeService } from '../../node-contract/index.js';

const info: SandboxInfo = sandboxInfo('sbx-aaaaaaaaaaaa');

/**
 * `probe` is called with each new sandbox's id at the moment the node would
 * record it (after the claim): tests check the owner is already there.
 * Template builds make a build sandbox like the node does and wait for
 * `buildGate` (when set) before publishing, so a test can act mid-build.
 */
function fakeService(): NodeService & { created: unknown[]; probe: (id: string) => void | Promise<void>; buildGate: Promise<void> | undefined; buildSandboxes: string[]; failBuild: boolean } {
  const created: unknown[] = [];
  const boxes = new Map([[info.id, info]]);
  const templates = [{ name: 'base', createdAt: info.createdAt }];
  const missing = (id: string) => new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
  let n = 0;
  const make = async (claim: ClaimSandbox | undefined, extra: Partial<SandboxInfo> = {}) => {
    const id = `sbx-${String(++n).padStart(12, 'b')}`;
    await claim?.(id);
    await fake.probe(id);
    const s = { ...info, id, hostname: id, createdAt: new Date(n * 1000).toISOString(), ...extra };
    boxes.set(id, s);
    return s;
  };
  const fake: ReturnType<typeof fakeService> = {
    created,
    probe: () => {},
    buildGate: undefined,
    buildSandboxes: [],
    failBuild: false,
    async create(req, claim) {
      created.push(req);
      return make(claim, { metadata: (req as { metadata?: Record<string, string> }).metadata ?? {} });
    },
    async get(id) {
      const s = boxes.get(id);
      if (!s) throw missing(id);
      return s;
    },
    list: async () => [...boxes.values()],
    async delete(id) {
      if (!boxes.delete(id)) throw missing(id);
    },
    async spawn(id) {
      throw missing(id);
    },
    async attach(id) {
      throw missing(id);
    },
    async watch(id) {
      throw missing(id);
    },
    async connectPort(id) {
      throw missing(id);
    },
    async metrics(id) {
      throw missing(id);
    },
    listProcesses: async (id) => Promise.reject(missing(id)),
    signal: async (id) => Promise.reject(missing(id)),
    writeStdin: async (id) => Promise.reject(missing(id)),
    readFile: async (id) => Promise.reject(missing(id)),
    writeFile: async (id) => Promise.reject(missing(id)),
    listDir: async (id) => Promise.reject(missing(id)),
    stat: async (id) => Promise.reject(missing(id)),
    mkdir: async (id) => Promise.reject(missing(id)),
    move: async (id) => Promise.reject(missing(id)),
    remove: async (id) => Promise.reject(missing(id)),
    templates: async () => [...templates],
    snapshot: async (id) => Promise.reject(missing(id)),
    timeline: async (id) => Promise.reject(missing(id)),
    getSnapshot: async (id) => Promise.reject(missing(id)),
    deleteSnapshot: async (id) => Promise.reject(missing(id)),
    pinSnapshot: async (id) => Promise.reject(missing(id)),
    pause: async (id) => Promise.reject(missing(id)),
    setTimeout: async (id) => Promise.reject(missing(id)),
    resume: async (id) => Promise.reject(missing(id)),
    rewind: async (id) => Promise.reject(missing(id)),
    fork: async (id, count, claim) => {
      if (!boxes.has(id)) throw missing(id);
      const out: SandboxInfo[] = [];
      for (let i = 0; i < count; i++) out.push(await make(claim));
      return out;
    },
    tree: async (id) => Promise.reject(missing(id)),
    buildTemplate: async (req, _progress, claim) => {
      if (req.name === 'base') throw new ForkdError('FAILED_PRECONDITION', 'the base template cannot be replaced');
      const build = await make(claim);
      fake.buildSandboxes.push(build.id);
      try {
        await fake.buildGate;
        if (fake.failBuild) throw new ForkdError('FAILED_PRECONDITION', 'setup command failed');
        const t = { name: req.name, createdAt: new Date().toISOString() };
        templates.push(t);
        return t;
      } finally {
        boxes.delete(build.id);
      }
    },
    deleteTemplate: async (name) => {
      const i = templates.findIndex((t) => t.name === name);
      if (i < 0) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
      templates.splice(i, 1);
    },
    stats: async () => ({ snapshots: 3, snapshotBytes: 4096, poolUsedBytes: 1 << 20, poolSizeBytes: 1 << 30, warmPoolHeld: 2 }),
  };
  return fake;
}

/** An app over the fake service with a fresh control plane; `call` uses the admin key of tenant `default`. */
async function testApp(svc: NodeService = fakeService(), throttle = new AuthThrottle({ burst: 10_000 })) {
  const store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store, throttle), quotas: new TenantQuotas(store), close: () => store.close() };
  const app = createApp({ svc, control, logger: silentLogger });
  const admin = (await control.keys.create({ format: 'forkd', admin: true }, undefined)).key;
  const call = async (method: string, path: string, body?: string, key: string | null = admin) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...(key ? { authorization: `Bearer ${key}` } : {}) };
    const r = await app.request(path, { method, body: body ?? null, headers });
    return { status: r.status, json: (await r.json().catch(() => null)) as any };
  };
  return { app, control, admin, call };
}

test('create validates with the protocol schema and applies defaults', async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  const ok = await call('POST', '/v1/sandboxes', JSON.stringify({ memoryMb: 256 }));
  assert.equal(ok.status, 201);
  assert.deepEqual(svc.created[0], { template: 'base', memoryMb: 256 });
});

test('bad input is INVALID_ARGUMENT with a stable shape, never a 500', async () => {
  const { call } = await testApp();
  for (const body of ['{nope', JSON.stringify({ memoryMb: -1 }), JSON.stringify({ template: '../etc' }), JSON.stringify({ bogus: 1 }), JSON.stringify({ cpus: 'many' })]) {
    const r = await call('POST', '/v1/sandboxes', body);
    assert.equal(r.status, 400, body);
    assert.equal(r.json.error.code, 'INVALID_ARGUMENT');
    assert.equal(typeof r.json.error.message, 'string');
  }
  const exec = await call('POST', `/v1/sandboxes/${info.id}/exec`, JSON.stringify({ cmd: ['a'], command: 'b' }));
  assert.equal(exec.json.error.code, 'INVALID_ARGUMENT');
  const noCmd = await call('POST', `/v1/sandboxes/${info.id}/exec`, JSON.stringify({}));
  assert.equal(noCmd.json.error.code, 'INVALID_ARGUMENT');
  const sel = await call('POST', `/v1/sandboxes/${info.id}/processes/abc/signal`, '{}');
  assert.equal(sel.json.error.code, 'INVALID_ARGUMENT');
  const nopath = await call('GET', `/v1/sandboxes/${info.id}/files`);
  assert.equal(nopath.json.error.code, 'INVALID_ARGUMENT');
  const badRewind = await call('POST', `/v1/sandboxes/${info.id}/rewind`, JSON.stringify({ snapshot: 'nope' }));
  assert.equal(badRewind.json.error.code, 'INVALID_ARGUMENT');
  const badFork = await call('POST', `/v1/sandboxes/${info.id}/fork`, JSON.stringify({ count: 1000 }));
  assert.equal(badFork.json.error.code, 'INVALID_ARGUMENT');
  const badName = await call('POST', `/v1/sandboxes/${info.id}/snapshots`, JSON.stringify({ name: 'a b/c' }));
  assert.equal(badName.json.error.code, 'INVALID_ARGUMENT');
});

test('unknown sandboxes and routes are NOT_FOUND', async () => {
  const { call } = await testApp();
  assert.equal((await call('GET', '/v1/sandboxes/sbx-zzzzzzzzzzzz')).json.error.code, 'NOT_FOUND');
  assert.equal((await call('DELETE', '/v1/sandboxes/sbx-zzzzzzzzzzzz')).status, 404);
  assert.equal((await call('GET', '/v1/nope')).json.error.code, 'NOT_FOUND');
});

test('oversized bodies are INVALID_ARGUMENT, like any other bad input', async () => {
  const { app, admin } = await testApp();
  const r = await app.request('/v1/sandboxes', { method: 'POST', body: 'x'.repeat(10), headers: { 'content-length': String(100 * 1024 * 1024), authorization: `Bearer ${admin}` } });
  assert.equal(r.status, 400);
  assert.equal(((await r.json()) as any).error.code, 'INVALID_ARGUMENT');
});

test('no key, a wrong key or a revoked key is UNAUTHENTICATED; health needs none', async () => {
  const { call, control } = await testApp();
  assert.equal((await call('GET', '/v1/health', undefined, null)).status, 200);
  const none = await call('GET', '/v1/sandboxes', undefined, null);
  assert.equal(none.status, 401);
  assert.equal(none.json.error.code, 'UNAUTHENTICATED');
  assert.equal((await call('GET', '/v1/sandboxes', undefined, 'forkd_0000')).json.error.code, 'UNAUTHENTICATED');
  const k = await control.keys.create({ format: 'e2b', admin: false }, undefined);
  assert.match(k.key, /^e2b_[0-9a-f]{40}$/);
  assert.equal((await call('GET', '/v1/sandboxes', undefined, k.key)).status, 200);
  await control.keys.revoke(k.info.id, { keyId: 'x', tenant: 'default', admin: true });
  assert.equal((await call('GET', '/v1/sandboxes', undefined, k.key)).status, 401);
});

test('tenants see only their own sandboxes; other ids answer NOT_FOUND', async () => {
  const { call } = await testApp();
  const a = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const b = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'beta' }))).json.key as string;
  const mine = (await call('POST', '/v1/sandboxes', '{}', a)).json;
  assert.equal((await call('GET', `/v1/sandboxes/${mine.id}`, undefined, a)).status, 200);
  for (const [m, path] of [['GET', `/v1/sandboxes/${mine.id}`], ['DELETE', `/v1/sandboxes/${mine.id}`], ['POST', `/v1/sandboxes/${mine.id}/exec`], ['GET', `/v1/sandboxes/${mine.id}/files?path=/etc/passwd`], ['POST', `/v1/sandboxes/${mine.id}/pause`]] as const) {
    const r = await call(m, path, m === 'POST' ? JSON.stringify({ cmd: ['id'] }) : undefined, b);
    assert.equal(r.json.error.code, 'NOT_FOUND', `${m} ${path}`);
  }
  assert.deepEqual((await call('GET', '/v1/sandboxes', undefined, b)).json.sandboxes, []);
  assert.deepEqual((await call('GET', '/v1/sandboxes', undefined, a)).json.sandboxes.map((s: { id: string }) => s.id), [mine.id]);
  // Sandboxes with no owner (from before tenancy) are reachable by admin keys only.
  assert.ok((await call('GET', '/v1/sandboxes')).json.sandboxes.some((s: { id: string }) => s.id === info.id));
  // Only admins mint keys.
  assert.equal((await call('POST', '/v1/keys', '{}', a)).json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call('POST', '/v1/keys', JSON.stringify({ tenant: 'Bad Name' }))).json.error.code, 'INVALID_ARGUMENT');
});

test('every call lands in the audit log with key, tenant, sandbox, operation, target, code and duration', async () => {
  const { call } = await testApp();
  const a = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const s = (await call('POST', '/v1/sandboxes', '{}', a)).json;
  await call('GET', `/v1/sandboxes/${s.id}/files?path=/etc/hostname`, undefined, a);
  await call('GET', '/v1/sandboxes/sbx-zzzzzzzzzzzz', undefined, a);
  await call('GET', '/v1/sandboxes', undefined, 'forkd_wrong');
  const mine = (await call('GET', '/v1/audit', undefined, a)).json.records as any[];
  assert.ok(mine.every((r) => r.tenant === 'acme'), 'a tenant sees only its own records');
  const create = mine.find((r) => r.operation === 'POST /v1/sandboxes');
  assert.ok(create && create.code === 'OK' && create.status === 201 && typeof create.durationMs === 'number' && create.keyId);
  const read = mine.find((r) => r.operation === 'GET /v1/sandboxes/:id/files');
  assert.equal(read.sandboxId, s.id);
  assert.equal(read.target, '/etc/hostname');
  assert.ok(mine.some((r) => r.code === 'NOT_FOUND' && r.status === 404));
  const all = (await call('GET', '/v1/audit?limit=1000')).json.records as any[];
  assert.ok(all.some((r) => r.code === 'UNAUTHENTICATED' && r.keyId === undefined), 'refused calls are audited too');
  assert.ok(all.some((r) => r.operation === 'POST /v1/keys'));
  const filtered = (await call('GET', `/v1/audit?sandbox=${s.id}`)).json.records as any[];
  assert.ok(filtered.length >= 2 && filtered.every((r) => r.sandboxId === s.id));
  assert.equal((await call('GET', '/v1/audit?tenant=beta', undefined, a)).json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call('GET', '/v1/audit?limit=0')).json.error.code, 'INVALID_ARGUMENT');
});

test('list: filters by state and metadata, pages with a cursor', async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  for (let i = 0; i < 5; i++) await call('POST', '/v1/sandboxes', JSON.stringify({ metadata: { n: String(i % 2) } }));
  const all = (await call('GET', '/v1/sandboxes')).json;
  assert.equal(all.sandboxes.length, 6);
  assert.equal(all.nextCursor, undefined);
  const page1 = (await call('GET', '/v1/sandboxes?limit=4')).json;
  assert.equal(page1.sandboxes.length, 4);
  const page2 = (await call('GET', `/v1/sandboxes?limit=4&cursor=${page1.nextCursor}`)).json;
  assert.equal(page2.sandboxes.length, 2);
  assert.equal(page2.nextCursor, undefined);
  assert.equal(new Set([...page1.sandboxes, ...page2.sandboxes].map((s: { id: string }) => s.id)).size, 6, 'pages do not overlap');
  const tagged = (await call('GET', `/v1/sandboxes?metadata=${encodeURIComponent('n=1')}`)).json.sandboxes;
  assert.equal(tagged.length, 2);
  assert.equal((await call('GET', '/v1/sandboxes?state=paused')).json.sandboxes.length, 0);
  assert.equal((await call('GET', '/v1/sandboxes?state=running,paused')).json.sandboxes.length, 6);
  assert.equal((await call('GET', '/v1/sandboxes?state=sleepy')).json.error.code, 'INVALID_ARGUMENT');
  assert.equal((await call('GET', '/v1/sandboxes?limit=0')).json.error.code, 'INVALID_ARGUMENT');
  assert.equal((await call('GET', '/v1/sandboxes?cursor=!!')).json.error.code, 'INVALID_ARGUMENT');
});

test('/metrics: Prometheus text for admin keys only', async () => {
  const { app, admin, call } = await testApp();
  await call('GET', '/v1/sandboxes');
  const r = await app.request('/metrics', { headers: { authorization: `Bearer ${admin}` } });
  assert.equal(r.status, 200);
  const text = await r.text();
  assert.match(text, /^forkd_sandboxes\{state="running"\} 1$/m);
  assert.match(text, /^forkd_snapshot_bytes 4096$/m);
  assert.match(text, /^forkd_pool_used_bytes 1048576$/m);
  assert.match(text, /^forkd_api_request_duration_seconds_count\{operation="GET \/v1\/sandboxes",code="OK"\} 1$/m);
  assert.match(text, /^forkd_api_request_duration_seconds_bucket\{operation="GET \/v1\/sandboxes",code="OK",le="\+Inf"\} 1$/m);
  const user = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  assert.equal((await app.request('/metrics', { headers: { authorization: `Bearer ${user}` } })).status, 403);
  assert.equal((await app.request('/metrics')).status, 401);
});

test('/openapi.json is generated from the zod schemas and covers every route the app serves', async () => {
  const { app } = await testApp();
  const r = await app.request('/openapi.json');
  assert.equal(r.status, 200);
  const doc = (await r.json()) as any;
  assert.equal(doc.openapi, '3.1.0');
  const documented = new Set(Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops as object).map((m) => `${m.toUpperCase()} ${p}`)));
  const served = app.routes.filter((x) => x.method !== 'ALL' && x.path.startsWith('/v1/')).map((x) => `${x.method} ${x.path.replace(/:([a-z]+)/g, '{$1}')}`);
  for (const s of served) assert.ok(documented.has(s), `undocumented route ${s}`);
  for (const d of documented) assert.ok(served.includes(d), `documented route not served: ${d}`);
  const create = doc.paths['/v1/sandboxes'].post.requestBody.content['application/json'].schema;
  assert.equal(create.properties.memoryMb.maximum, 262144, 'limits come from the protocol schema');
  assert.equal(create.additionalProperties, false);
  assert.ok(doc.paths['/v1/audit'].get.parameters.some((p: { name: string }) => p.name === 'limit'));
});

test('every route: no key is UNAUTHENTICATED; unknown ids and bad input get a coded error, never a 500', async () => {
  const { call } = await testApp();
  for (const op of ROUTES) {
    const path = op.path.replace(':id', 'sbx-zzzzzzzzzzzz').replace(':snap', 'snap-zzzzzzzzzzzz').replace(':sel', 'tag:nope').replace(':name', 'nope').replace(/:[a-z]+/, 'x');
    const method = op.method.toUpperCase();
    const anon = await call(method, path, op.body ? '{}' : undefined, null);
    if (op.public) assert.equal(anon.status, 200, path);
    else assert.equal(anon.json?.error?.code, 'UNAUTHENTICATED', `${method} ${path}`);
    for (const body of op.body ? ['{}', '[]', '{"x":'] : [undefined]) {
      const r = await call(method, `${path}${op.query ? '?path=/x' : ''}`, body);
      assert.ok(r.status < 500, `${method} ${path} ${body}: ${r.status}`);
      if (r.status >= 400) assert.ok(r.json?.error?.code in ERROR_CODES, `${method} ${path}: ${JSON.stringify(r.json)}`);
    }
  }
});

/** Reads an NDJSON answer (template builds) whole. */
async function ndjson(r: Response): Promise<any[]> {
  return (await r.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

test('the owner is written before the node records a sandbox: create, fork and a template build sandbox', async () => {
  const svc = fakeService();
  const { app, call, control } = await testApp(svc);
  const acme = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const owners: (string | undefined)[] = [];
  svc.probe = async (id) => {
    owners.push(await control.store.owner('sandbox', id));
  };
  const s = (await call('POST', '/v1/sandboxes', '{}', acme)).json;
  const forks = (await call('POST', `/v1/sandboxes/${s.id}/fork`, JSON.stringify({ count: 2 }), acme)).json.sandboxes;
  assert.equal(forks.length, 2);
  const build = await app.request('/v1/templates', { method: 'POST', headers: { authorization: `Bearer ${acme}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'py', setup: ['true'] }) });
  assert.equal((await ndjson(build)).at(-1).type, 'done');
  assert.deepEqual(owners, ['acme', 'acme', 'acme', 'acme'], 'every sandbox had its owner when the node recorded it');
});

test('a default-tenant key cannot reach another tenant\'s template build sandbox, nor a sandbox with no owner', async () => {
  const svc = fakeService();
  let open!: () => void;
  svc.buildGate = new Promise<void>((r) => (open = r));
  const { app, call } = await testApp(svc);
  const acme = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const dflt = (await call('POST', '/v1/keys', '{}')).json.key as string;
  const building = app.request('/v1/templates', { method: 'POST', headers: { authorization: `Bearer ${acme}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'secret', setup: ['echo $TOKEN'] }) });
  while (svc.buildSandboxes.length === 0) await new Promise((r) => setTimeout(r, 1));
  const id = svc.buildSandboxes[0]!;
  // The attack: list, read, exec into and delete the build sandbox with a key of the default tenant (and with the admin key, also default's).
  for (const key of [dflt, null]) {
    const k = key ?? undefined;
    assert.ok(!(await call('GET', '/v1/sandboxes', undefined, k)).json.sandboxes.some((s: { id: string }) => s.id === id), 'not listed');
    for (const [m, path, body] of [['GET', `/v1/sandboxes/${id}`], ['POST', `/v1/sandboxes/${id}/exec`, JSON.stringify({ cmd: ['id'] })], ['DELETE', `/v1/sandboxes/${id}`], ['POST', `/v1/sandboxes/${id}/fork`, '{}']] as const) {
      assert.equal((await call(m, path, body, k)).json.error.code, 'NOT_FOUND', `${m} ${path}`);
    }
  }
  // The building tenant reaches its own build sandbox.
  assert.equal((await call('GET', `/v1/sandboxes/${id}`, undefined, acme)).status, 200);
  open();
  assert.equal((await ndjson(await building)).at(-1).type, 'done');
  // A sandbox with no owner (from an older version): admin keys only, never a tenant key of `default`.
  assert.equal((await call('GET', `/v1/sandboxes/${info.id}`, undefined, dflt)).json.error.code, 'NOT_FOUND');
  assert.ok(!(await call('GET', '/v1/sandboxes', undefined, dflt)).json.sandboxes.some((s: { id: string }) => s.id === info.id));
  assert.equal((await call('GET', `/v1/sandboxes/${info.id}`)).status, 200);
});

test('template names: of two tenants racing for a name the second answers ALREADY_EXISTS; shared names cannot be taken over', async () => {
  const svc = fakeService();
  let open!: () => void;
  svc.buildGate = new Promise<void>((r) => (open = r));
  const { app, call } = await testApp(svc);
  const acme = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const beta = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'beta' }))).json.key as string;
  const build = (key: string, name: string) => app.request('/v1/templates', { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ name, setup: ['true'] }) });
  const first = build(acme, 'py');
  const second = await ndjson(await build(beta, 'py'));
  assert.equal(second.at(-1).error.code, 'ALREADY_EXISTS', 'reserved when the build started, not when it ended');
  open();
  assert.equal((await ndjson(await first)).at(-1).template.name, 'py');
  assert.equal((await ndjson(await build(beta, 'py'))).at(-1).error.code, 'ALREADY_EXISTS');
  assert.ok(!(await call('GET', '/v1/templates', undefined, beta)).json.templates.some((t: { name: string }) => t.name === 'py'));
  assert.equal((await call('POST', '/v1/sandboxes', JSON.stringify({ template: 'py' }), beta)).json.error.code, 'NOT_FOUND');
  // The owner rebuilds its own.
  assert.equal((await ndjson(await build(acme, 'py'))).at(-1).type, 'done');
  // A shared template (no owner, like one setup built) is not taken over by a tenant's build.
  const adminBuilt = await ndjson(await build(acme, 'base'));
  assert.equal(adminBuilt.at(-1).error.code, 'ALREADY_EXISTS');
  // A failed first build gives the name back.
  svc.failBuild = true;
  assert.equal((await ndjson(await build(beta, 'rb'))).at(-1).error.code, 'FAILED_PRECONDITION');
  svc.failBuild = false;
  assert.equal((await ndjson(await build(acme, 'rb'))).at(-1).type, 'done');
  // Deleting gives it back too.
  assert.equal((await call('DELETE', '/v1/templates/rb', undefined, acme)).status, 204);
  assert.equal((await ndjson(await build(beta, 'rb'))).at(-1).type, 'done');
});

test('a non-admin key cannot revoke an admin key; it still revokes its tenant\'s other keys', async () => {
  const { call } = await testApp();
  const acmeAdmin = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme', admin: true }))).json;
  const member = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json;
  const other = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json;
  const r = await call('DELETE', `/v1/keys/${acmeAdmin.info.id}`, undefined, member.key);
  assert.equal(r.status, 403);
  assert.equal(r.json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call('GET', '/v1/keys', undefined, acmeAdmin.key)).status, 200, 'the admin key still works');
  assert.equal((await call('DELETE', `/v1/keys/${other.info.id}`, undefined, member.key)).status, 204);
  assert.equal((await call('DELETE', `/v1/keys/${acmeAdmin.info.id}`, undefined, acmeAdmin.key)).status, 204, 'admins revoke admin keys');
});

test('a key in a query string is refused on REST routes, with a message naming the header', async () => {
  const { app, admin } = await testApp();
  for (const headers of [{}, { authorization: `Bearer ${admin}` }] as Record<string, string>[]) {
    const r = await app.request(`/v1/sandboxes?api_key=${admin}`, { headers });
    assert.equal(r.status, 401);
    const body = (await r.json()) as any;
    assert.equal(body.error.code, 'UNAUTHENTICATED');
    assert.match(body.error.message, /header/);
  }
  assert.equal((await app.request('/metrics?api_key=' + admin)).status, 401);
  assert.equal((await app.request('/v1/sandboxes', { headers: { 'x-api-key': admin } })).status, 200);
});

test('WebSocket upgrades still take ?api_key= (browsers cannot set headers); a wrong one is refused', async () => {
  const { listen } = await import('./server.js');
  const { control, admin } = await testApp();
  const server = await listen({ svc: fakeService(), control, logger: silentLogger }, '127.0.0.1', 0);
  try {
    const open = (key: string) =>
      new Promise<string>((resolve) => {
        const ws = new WebSocket(`${server.url.replace('http', 'ws')}/v1/sandboxes/${info.id}/stream?api_key=${key}`);
        ws.onopen = () => {
          ws.close();
          resolve('open');
        };
        ws.onerror = () => resolve('refused');
      });
    assert.equal(await open(admin), 'open');
    assert.equal(await open('forkd_wrong'), 'refused');
  } finally {
    await server.close();
  }
});

test('failed authentications are throttled per source address, with a retry hint; other sources and later retries work', async () => {
  let now = 1_000_000;
  const { app, admin } = await testApp(fakeService(), new AuthThrottle({ burst: 5, perSecond: 1 / 3, now: () => now }));
  const from = (ip: string, key: string) => app.request('/v1/sandboxes', { headers: { authorization: `Bearer ${key}` } }, { incoming: { socket: { remoteAddress: ip } } });
  for (let i = 0; i < 5; i++) assert.equal((await from('10.0.0.1', `forkd_guess${i}`)).status, 401);
  const blocked = await from('10.0.0.1', 'forkd_guess5');
  assert.equal(blocked.status, 429);
  const body = (await blocked.json()) as any;
  assert.equal(body.error.code, 'RESOURCE_EXHAUSTED');
  assert.ok(body.error.details.retryAfterSeconds > 0 && Number(blocked.headers.get('retry-after')) > 0);
  // Even the right key is refused from that source meanwhile: guessing learns nothing from the answers.
  assert.equal((await from('10.0.0.1', admin)).status, 429);
  assert.equal((await from('10.0.0.2', admin)).status, 200, 'another source is not affected');
  now += 3_000;
  assert.equal((await from('10.0.0.1', admin)).status, 200, 'after the hint, the source may try again');
});

test('unauthenticated calls are audited at a bounded rate; authenticated calls always are', async () => {
  const { app, call, control } = await testApp();
  for (let i = 0; i < 300; i++) await app.request('/v1/sandboxes', { headers: { authorization: `Bearer forkd_flood${i}` } }, { incoming: { socket: { remoteAddress: `10.1.${i >> 8}.${i & 255}` } } });
  const refused = (await control.store.queryAudit({ limit: 1000 })).filter((r) => r.keyId === undefined);
  assert.ok(refused.length >= 50 && refused.length <= 70, `${refused.length} rows for 300 refused calls`);
  await call('GET', '/v1/sandboxes');
  assert.equal((await control.store.queryAudit({ limit: 1 }))[0]!.operation, 'GET /v1/sandboxes');
});

test('audit retention: records older than the configured days are pruned, newer ones kept', async () => {
  const { startAuditRetention } = await import('../audit-retention.js');
  const { loadConfig } = await import('../../shared/config.js');
  assert.equal(loadConfig({}).auditRetentionDays, 30);
  assert.equal(loadConfig({ FORKD_AUDIT_RETENTION_DAYS: '7' }).auditRetentionDays, 7);
  assert.equal(loadConfig({ FORKD_AUDIT_RETENTION_DAYS: '0' }).auditRetentionDays, 0);
  const store = new SqliteControlStore(':memory:');
  const rec = (daysAgo: number) => ({ at: new Date(Date.now() - daysAgo * 86_400_000).toISOString(), operation: `GET /${daysAgo}`, code: 'OK', status: 200, durationMs: 1 });
  for (const d of [400, 31, 29, 0]) await store.appendAudit(rec(d));
  startAuditRetention(store, 0)();
  assert.equal((await store.queryAudit({ limit: 100 })).length, 4, '0 keeps everything');
  const stop = startAuditRetention(store, 30);
  stop();
  // The first pruning runs at start, without waiting for the interval.
  await waitFor(async () => (await store.queryAudit({ limit: 100 })).length === 2);
  assert.deepEqual((await store.queryAudit({ limit: 100 })).map((r) => r.operation).sort(), ['GET /0', 'GET /29']);
  await store.close();
});

test('proxy tokens: shown once at creation, stored as SHA-256 only; the proxy accepts the token, not a wrong one', async () => {
  const { mkdtemp, readFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { createHash } = await import('node:crypto');
  const Database = (await import('better-sqlite3')).default;
  const { authorizeProxy } = await import('./port-proxy.js');
  const dir = await mkdtemp(join(tmpdir(), 'forkd-tokens-'));
  try {
    const file = join(dir, 'control.db');
    // An older version's database, with a plain token.
    let store = new SqliteControlStore(file);
    await store.close();
    const old = new Database(file);
    old.prepare('INSERT INTO sandbox_tokens (id, token) VALUES (?, ?)').run('sbx-oldoldoldold', 'plain-old-token-1234567890');
    old.close();
    store = new SqliteControlStore(file);
    const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), close: () => store.close() };
    const app = createApp({ svc: fakeService(), control, logger: silentLogger });
    const admin = (await control.keys.create({ format: 'forkd', admin: true }, undefined)).key;
    const h = { authorization: `Bearer ${admin}`, 'content-type': 'application/json' };
    const s = (await (await app.request('/v1/sandboxes', { method: 'POST', headers: h, body: '{}' })).json()) as SandboxInfo;
    assert.match(s.proxyToken ?? '', /^[A-Za-z0-9_-]{32}$/);
    const again = (await (await app.request(`/v1/sandboxes/${s.id}`, { headers: h })).json()) as SandboxInfo;
    assert.equal(again.proxyToken, undefined, 'later answers do not carry it');
    const listed = (await (await app.request('/v1/sandboxes', { headers: h })).json()) as { sandboxes: SandboxInfo[] };
    assert.ok(listed.sandboxes.every((x) => x.proxyToken === undefined));
    // The database holds no plain token, new or migrated (file and WAL).
    await store.close();
    const bytes = Buffer.concat([await readFile(file), await readFile(`${file}-wal`).catch(() => Buffer.alloc(0))]);
    assert.equal(bytes.includes(s.proxyToken!), false);
    assert.equal(bytes.includes('plain-old-token-1234567890'), false);
    store = new SqliteControlStore(file);
    const c2 = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), close: () => store.close() };
    assert.equal(await store.tokenHash(s.id), createHash('sha256').update(s.proxyToken!).digest('hex'));
    const target = (id: string) => ({ id, port: 8000, path: '/' });
    const tok = (t: string) => (n: string) => (n === 'x-forkd-token' ? t : undefined);
    assert.deepEqual(await authorizeProxy(c2, target(s.id), tok(s.proxyToken!)), { authWasKey: false });
    assert.deepEqual(await authorizeProxy(c2, target('sbx-oldoldoldold'), tok('plain-old-token-1234567890')), { authWasKey: false }, 'migrated tokens keep working');
    await assert.rejects(authorizeProxy(c2, target(s.id), tok('plain-old-token-1234567890')), /invalid proxy token/);
    await assert.rejects(authorizeProxy(c2, target(s.id), tok((await store.tokenHash(s.id))!)), /invalid proxy token/, 'the hash itself is not a token');
    await store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
