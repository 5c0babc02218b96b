import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ERROR_CODES } from '@forkd/protocol';
import { ROUTES } from './routes/index.js';
import { fakeService, info, testApp } from './app-test-kit.js';

test('create validates with the protocol schema and applies defaults', async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  const ok = await call('POST', '/v1/sandboxes', JSON.stringify({ memoryMb: 256 }));
  assert.equal(ok.status, 201);
  assert.deepEqual(svc.created[0], { template: 'base', memoryMb: 256 });
});

test('pause and resume take an optional memory flag; a fork its own metadata and env', async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  assert.equal((await call('POST', `/v1/sandboxes/${info.id}/pause`)).json.state, 'paused');
  assert.deepEqual(svc.calls.at(-1), ['pause', { memory: true }], 'no body: memory kept');
  await call('POST', `/v1/sandboxes/${info.id}/resume`);
  assert.equal((await call('POST', `/v1/sandboxes/${info.id}/pause`, JSON.stringify({ memory: false }))).status, 200);
  assert.deepEqual(svc.calls.at(-1), ['pause', { memory: false }]);
  assert.equal((await call('POST', `/v1/sandboxes/${info.id}/resume`, JSON.stringify({ memory: false }))).json.state, 'running');
  assert.deepEqual(svc.calls.at(-1), ['resume', { memory: false }]);
  assert.equal((await call('POST', `/v1/sandboxes/${info.id}/pause`, JSON.stringify({ memory: 'no' }))).json.error.code, 'INVALID_ARGUMENT');
  const forked = await call('POST', `/v1/sandboxes/${info.id}/fork`, JSON.stringify({ metadata: { k: 'fork' }, env: { FOO: 'bar' } }));
  assert.equal(forked.status, 201);
  assert.deepEqual(svc.calls.at(-1), ['fork', { metadata: { k: 'fork' }, env: { FOO: 'bar' } }]);
  assert.deepEqual(forked.json.sandboxes[0].metadata, { k: 'fork' });
  assert.equal(forked.json.sandboxes[0].env.FOO, 'bar');
  assert.equal((await call('POST', `/v1/sandboxes/${info.id}/fork`, JSON.stringify({ env: { 'BAD-NAME': 'x' } }))).json.error.code, 'INVALID_ARGUMENT');
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
  assert.match(text, /^forkd_hot_paused_sandboxes 1$/m);
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
    // Nodes authenticate with the fleet's join token, and this app serves one node, not a fleet.
    if (op.path === '/v1/fleet/heartbeat') assert.equal(anon.json?.error?.code, 'FAILED_PRECONDITION', path);
    else if (op.public) assert.equal(anon.status, 200, path);
    else assert.equal(anon.json?.error?.code, 'UNAUTHENTICATED', `${method} ${path}`);
    for (const body of op.body ? ['{}', '[]', '{"x":'] : [undefined]) {
      const r = await call(method, `${path}${op.query ? '?path=/x' : ''}`, body);
      assert.ok(r.status < 500, `${method} ${path} ${body}: ${r.status}`);
      if (r.status >= 400) assert.ok(r.json?.error?.code in ERROR_CODES, `${method} ${path}: ${JSON.stringify(r.json)}`);
    }
  }
});
