import { testCipher } from '../../testing/test-cipher.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SandboxInfo } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { waitFor } from '../../testing/helpers.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { AuthThrottle } from '../auth/auth-throttle.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { createApp } from './app.js';
import { callerView } from './caller-view.js';
import { fakeService, info, ndjson, testApp } from './app-test-kit.js';

/* Tenancy and credentials through the API: owners before records, template names, keys, throttling, audit, proxy tokens. */

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
    const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
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
    const c2 = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
    assert.equal(await store.tokenHash(s.id), createHash('sha256').update(s.proxyToken!).digest('hex'));
    const target = (id: string) => ({ id, port: 8000, path: '/' });
    const tok = (t: string) => (n: string) => (n === 'x-forkd-token' ? t : undefined);
    assert.deepEqual(await authorizeProxy(c2, target(s.id), tok(s.proxyToken!)), { strip: [] });
    assert.deepEqual(await authorizeProxy(c2, target('sbx-oldoldoldold'), tok('plain-old-token-1234567890')), { strip: [] }, 'migrated tokens keep working');
    await assert.rejects(authorizeProxy(c2, target(s.id), tok('plain-old-token-1234567890')), /invalid proxy token/);
    await assert.rejects(authorizeProxy(c2, target(s.id), tok((await store.tokenHash(s.id))!)), /invalid proxy token/, 'the hash itself is not a token');
    await store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('snapshot and template export and import are the control plane\'s own: no caller reaches them, an admin key included', async () => {
  const svc = fakeService();
  const { control } = await testApp(svc);
  for (const who of [{ keyId: 'k1', tenant: 'acme', admin: false }, { keyId: 'k2', tenant: 'default', admin: true }]) {
    const view = callerView(svc, control, who);
    await assert.rejects(view.exportSnapshot('snap-aaaaaaaaaaaa'), { code: 'PERMISSION_DENIED' });
    await assert.rejects(view.importSnapshot('snapshots/snap-aaaaaaaaaaaa/manifest.json', { asSandbox: true }), { code: 'PERMISSION_DENIED' });
    await assert.rejects(view.exportTemplate('base'), { code: 'PERMISSION_DENIED' });
    await assert.rejects(view.importTemplate('templates/t/0f0e0d0c-0b0a-0908-0706-050403020100/template.json'), { code: 'PERMISSION_DENIED' });
  }
  assert.deepEqual(svc.calls.filter(([op]) => /^(export|import)(Snapshot|Template)$/.test(String(op))), [], 'the node was never asked');
});

test('shared templates and apt packages are for admin keys; a tenant template never becomes shared', async () => {
  const svc = fakeService();
  const { app, control, call } = await testApp(svc);
  const acme = (await call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const build = async (body: object, key?: string) => {
    const r = await app.request('/v1/templates', { method: 'POST', headers: { authorization: `Bearer ${key ?? (await adminKey())}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    return (await ndjson(r)).at(-1) as { type: string; error?: { code: string } };
  };
  const adminKey = async () => (await call('POST', '/v1/keys', JSON.stringify({ admin: true }))).json.key as string;
  assert.equal((await build({ name: 'pub', shared: true }, acme)).error?.code, 'PERMISSION_DENIED');
  assert.equal((await build({ name: 'pkgs', aptPackages: ['curl'] }, acme)).error?.code, 'PERMISSION_DENIED');
  assert.equal((await build({ name: 'pub', shared: true, aptPackages: ['curl'] })).type, 'done');
  assert.equal(await control.store.owner('template', 'pub'), undefined, 'no owner: every tenant sees it');
  assert.equal((await build({ name: 'mine' }, acme)).type, 'done');
  assert.equal((await build({ name: 'mine', shared: true })).error?.code, 'ALREADY_EXISTS');
  assert.equal(await control.store.owner('template', 'mine'), 'acme');
});
