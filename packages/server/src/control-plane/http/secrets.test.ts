import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeCredential } from '@forkd/protocol';
import { fakeService, testApp } from './app-test-kit.js';

/* Secrets and grants through the API, over the fake node: what reaches the node, what answers carry, tenancy and audit. */

const pushed = (svc: ReturnType<typeof fakeService>) => svc.calls.filter(([k]) => k === 'setCredentials').map(([, v]) => v as { id: string; creds: NodeCredential[] });

test('secrets: set from a body, listed by name only, removed; no answer nor audit record carries the value', async () => {
  const { call } = await testApp();
  assert.equal((await call('PUT', '/v1/secrets/TOKEN', JSON.stringify({ value: 'sk-v4lue-1' }))).status, 200);
  const ls = await call('GET', '/v1/secrets');
  assert.deepEqual(ls.json.secrets.map((s: { name: string }) => s.name), ['TOKEN']);
  assert.ok(!JSON.stringify(ls.json).includes('sk-v4lue'));
  assert.equal((await call('PUT', '/v1/secrets/bad%20name', JSON.stringify({ value: 'x' }))).json.error.code, 'INVALID_ARGUMENT');
  const crlf = await call('PUT', '/v1/secrets/TOKEN2', JSON.stringify({ value: 'sk-v4lue-2\r\nX: y' }));
  assert.equal(crlf.json.error.code, 'INVALID_ARGUMENT');
  assert.ok(!JSON.stringify(crlf.json).includes('sk-v4lue'));
  assert.equal((await call('DELETE', '/v1/secrets/TOKEN')).status, 204);
  assert.equal((await call('DELETE', '/v1/secrets/TOKEN')).json.error.code, 'NOT_FOUND');
  const audit = await call('GET', '/v1/audit?limit=100');
  assert.ok(audit.json.records.some((r: { operation: string; target?: string }) => r.operation === 'PUT /v1/secrets/:name' && r.target === 'TOKEN'));
  assert.ok(!JSON.stringify(audit.json).includes('sk-v4lue'));
});

test('grants: the node gets the header resolved; revocation and secret removal replace its set at once; expired ones are gone', async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  await call('PUT', '/v1/secrets/TOKEN', JSON.stringify({ value: 'sk-v4lue-1' }));
  const sb = (await call('POST', '/v1/sandboxes', '{}')).json.id as string;
  const bad = await call('POST', `/v1/sandboxes/${sb}/grants`, JSON.stringify({ secret: 'TOKEN', hosts: ['api.example.com'], header: 'Authorization: Bearer' }));
  assert.equal(bad.json.error.code, 'INVALID_ARGUMENT');
  assert.equal((await call('POST', `/v1/sandboxes/${sb}/grants`, JSON.stringify({ secret: 'NOPE', hosts: ['a.com'], header: 'A: {secret}' }))).json.error.code, 'NOT_FOUND');
  const g = await call('POST', `/v1/sandboxes/${sb}/grants`, JSON.stringify({ secret: 'TOKEN', hosts: ['api.example.com:443'], methods: ['post'], header: 'Authorization: Bearer {secret}', ttlSeconds: 3600 }));
  assert.equal(g.status, 201);
  assert.match(g.json.id, /^grt-[0-9a-f]{16}$/);
  assert.equal(g.json.header, 'Authorization: Bearer {secret}');
  assert.ok(g.json.expiresAt);
  assert.ok(!JSON.stringify(g.json).includes('sk-v4lue'));
  const last = pushed(svc).at(-1)!;
  assert.equal(last.id, sb);
  assert.deepEqual(last.creds.map((c) => [c.grantId, c.headerName, c.headerValue, c.hosts, c.methods]), [[g.json.id, 'Authorization', 'Bearer sk-v4lue-1', ['api.example.com:443'], ['POST']]]);
  assert.deepEqual((await call('GET', `/v1/sandboxes/${sb}/grants`)).json.grants.map((x: { id: string }) => x.id), [g.json.id]);
  // A rotated value reaches the node at once.
  await call('PUT', '/v1/secrets/TOKEN', JSON.stringify({ value: 'sk-v4lue-2' }));
  assert.equal(pushed(svc).at(-1)!.creds[0]!.headerValue, 'Bearer sk-v4lue-2');
  assert.equal((await call('DELETE', `/v1/sandboxes/${sb}/grants/${g.json.id}`)).status, 204);
  assert.deepEqual(pushed(svc).at(-1), { id: sb, creds: [] });
  assert.equal((await call('DELETE', `/v1/sandboxes/${sb}/grants/${g.json.id}`)).json.error.code, 'NOT_FOUND');
  const g2 = (await call('POST', `/v1/sandboxes/${sb}/grants`, JSON.stringify({ secret: 'TOKEN', hosts: ['api.example.com'], header: 'X-Key: {secret}' }))).json;
  assert.equal(pushed(svc).at(-1)!.creds.length, 1);
  await call('DELETE', '/v1/secrets/TOKEN');
  assert.deepEqual(pushed(svc).at(-1), { id: sb, creds: [] }, 'removing the secret revokes its grants');
  assert.deepEqual((await call('GET', `/v1/sandboxes/${sb}/grants`)).json.grants, []);
  const audit = (await call('GET', '/v1/audit?limit=100')).json.records as { operation: string; target?: string }[];
  assert.ok(audit.some((r) => r.operation === 'POST /v1/sandboxes/:id/grants' && r.target?.startsWith(g2.id)));
  assert.ok(audit.some((r) => r.operation === 'DELETE /v1/sandboxes/:id/grants/:grant' && r.target === g.json.id));
});

test("grants are tenant-scoped: another tenant's sandbox is NOT_FOUND, its secrets are not usable", async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  const acme = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const beta = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'beta' }))).json.key as string;
  await call('PUT', '/v1/secrets/TOKEN', JSON.stringify({ value: 'acme-v4lue' }), acme);
  const sbA = (await call('POST', '/v1/sandboxes', '{}', acme)).json.id as string;
  const sbB = (await call('POST', '/v1/sandboxes', '{}', beta)).json.id as string;
  const spec = JSON.stringify({ secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}' });
  assert.equal((await call('POST', `/v1/sandboxes/${sbA}/grants`, spec, beta)).json.error.code, 'NOT_FOUND');
  assert.equal((await call('POST', `/v1/sandboxes/${sbB}/grants`, spec, beta)).json.error.code, 'NOT_FOUND', "beta has no secret TOKEN (acme's is not visible)");
  assert.deepEqual((await call('GET', '/v1/secrets', undefined, beta)).json.secrets, []);
  assert.equal((await call('POST', `/v1/sandboxes/${sbA}/grants`, spec, acme)).status, 201);
  assert.equal((await call('GET', `/v1/sandboxes/${sbA}/grants`, undefined, beta)).json.error.code, 'NOT_FOUND');
});

test('per-call grants: refused for a background exec; a missing secret fails the call before it starts', async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  const sb = (await call('POST', '/v1/sandboxes', '{}')).json.id as string;
  const grants = [{ secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}' }];
  assert.equal((await call('POST', `/v1/sandboxes/${sb}/exec`, JSON.stringify({ cmd: ['true'], background: true, grants }))).json.error.code, 'INVALID_ARGUMENT');
  assert.equal((await call('POST', `/v1/sandboxes/${sb}/exec`, JSON.stringify({ cmd: ['true'], grants }))).json.error.code, 'NOT_FOUND');
  assert.equal(pushed(svc).length, 0);
});

test("deleting a sandbox drops its grants; a template repeating {secret} past the header limit is refused", async () => {
  const svc = fakeService();
  const { call, control } = await testApp(svc);
  await call('PUT', '/v1/secrets/BIG', JSON.stringify({ value: 'x'.repeat(60 * 1024) }));
  const sb = (await call('POST', '/v1/sandboxes', '{}')).json.id as string;
  const big = await call('POST', `/v1/sandboxes/${sb}/grants`, JSON.stringify({ secret: 'BIG', hosts: ['a.com'], header: 'A: {secret}{secret}' }));
  assert.equal(big.json.error.code, 'INVALID_ARGUMENT');
  assert.deepEqual(await control.store.grants(sb), [], 'the refused grant is not kept');
  assert.equal((await call('POST', `/v1/sandboxes/${sb}/grants`, JSON.stringify({ secret: 'BIG', hosts: ['a.com'], header: 'A: {secret}' }))).status, 201);
  assert.equal((await call('DELETE', `/v1/sandboxes/${sb}`)).status, 204);
  assert.deepEqual(await control.store.grants(sb), []);
});

test('per-call grants through exec: in the node set while the process runs, gone when its stream ends (and when the start fails)', async () => {
  const svc = fakeService();
  let finish!: () => void;
  const exited = new Promise<void>((r) => (finish = r));
  let duringCall: NodeCredential[] | undefined;
  let failStart = false;
  svc.spawn = async () => {
    if (failStart) throw new Error('spawn failed');
    duringCall = pushed(svc).at(-1)?.creds;
    const process = { pid: 7, tag: undefined, pty: false, write: async () => {}, closeStdin() {}, signal() {}, resize() {}, detach() {} };
    return { process, exit: exited.then(() => ({ exitCode: 0, signal: 0, oomKilled: false })) };
  };
  const { app, call } = await testApp(svc);
  const admin = (await call('POST', '/v1/keys', JSON.stringify({ admin: true }))).json.key as string;
  await call('PUT', '/v1/secrets/TOKEN', JSON.stringify({ value: 'per-call-v4lue' }));
  const sb = (await call('POST', '/v1/sandboxes', '{}')).json.id as string;
  const body = JSON.stringify({ cmd: ['curl', 'x'], grants: [{ secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}' }] });
  const res = await app.request(`/v1/sandboxes/${sb}/exec`, { method: 'POST', headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' }, body });
  assert.equal(res.status, 200);
  assert.deepEqual(duringCall?.map((c) => c.headerValue), ['per-call-v4lue'], 'in force when the process starts');
  assert.equal((await call('GET', `/v1/sandboxes/${sb}/grants`)).json.grants[0].perCall, true);
  finish();
  const text = await res.text();
  assert.match(text, /"type":"exit"/);
  for (let i = 0; i < 50 && pushed(svc).at(-1)?.creds.length !== 0; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(pushed(svc).at(-1), { id: sb, creds: [] }, 'released when the call ended');
  assert.deepEqual((await call('GET', `/v1/sandboxes/${sb}/grants`)).json.grants, []);
  failStart = true;
  const n = pushed(svc).length;
  await call('POST', `/v1/sandboxes/${sb}/exec`, body);
  for (let i = 0; i < 50 && pushed(svc).length < n + 2; i++) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(pushed(svc).at(-1), { id: sb, creds: [] }, 'released when the start failed');
});

test("a sandbox's grants policy gates grant calls (route and per call), as `SECRET HOST`, naming the rule and audited", async () => {
  const svc = fakeService();
  const { call } = await testApp(svc);
  await call('PUT', '/v1/secrets/TOKEN', JSON.stringify({ value: 'sk-v4lue-1' }));
  await call('PUT', '/v1/secrets/OTHER', JSON.stringify({ value: 'sk-v4lue-2' }));
  const sb = (await call('POST', '/v1/sandboxes', '{}')).json.id as string;
  assert.equal((await call('PUT', `/v1/sandboxes/${sb}/policy`, JSON.stringify({ grants: { deny: [' evil\\.example$'], allow: ['^TOKEN '] } }))).status, 200);
  const grant = (secret: string, host: string) => call('POST', `/v1/sandboxes/${sb}/grants`, JSON.stringify({ secret, hosts: [host], header: 'A: {secret}' }));
  assert.equal((await grant('TOKEN', 'api.example.com')).status, 201);
  const denied = await grant('TOKEN', 'evil.example');
  assert.equal(denied.json.error.code, 'PERMISSION_DENIED');
  assert.match(denied.json.error.message, /grants\.deny\[0\]/);
  const notAllowed = await grant('OTHER', 'api.example.com');
  assert.equal(notAllowed.json.error.code, 'PERMISSION_DENIED');
  assert.match(notAllowed.json.error.message, /grants\.allow/);
  const perCall = await call('POST', `/v1/sandboxes/${sb}/exec`, JSON.stringify({ cmd: ['true'], grants: [{ secret: 'TOKEN', hosts: ['evil.example'], header: 'A: {secret}' }] }));
  assert.equal(perCall.json.error.code, 'PERMISSION_DENIED');
  assert.equal(pushed(svc).at(-1)!.creds.length, 1, 'only the allowed grant reached the node');
  const audit = (await call('GET', '/v1/audit?limit=100')).json.records as { operation: string; target?: string }[];
  assert.ok(audit.some((r) => r.operation === 'policy.deny' && /grant TOKEN evil\.example/.test(r.target ?? '')));
});
