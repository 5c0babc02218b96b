import { testCipher } from '../../testing/test-cipher.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { createLogger } from '../../shared/logger.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { createApp } from './app.js';
import { publicError } from './public-error.js';
import { sandboxInfo } from '../../testing/sandbox-info.js';
import type { NodeService } from '../../node-contract/index.js';

/** What a CRIU failure carries (shape of RuncRuntime.checkpoint's error): host paths, a command, CRIU's log. */
const criuFailure = () =>
  new ForkdError('INTERNAL', 'criu dump failed: Error (criu/files-reg.c:1712): Can\'t lookup mount=97 for fd=5 path=/var/lib/forkd/pool/sandboxes/sbx-aaaaaaaaaaaa/tmp/x', {
    cmd: 'runc --root /run/forkd/runc --criu /var/lib/forkd/cache/bin/criu checkpoint --image-path /dev/shm/forkd/snap-x sbx-aaaaaaaaaaaa',
    exitCode: 1,
    stderrTail: '(00.004) Error (criu/cr-dump.c:2093): Dumping FAILED. /var/lib/forkd/pool/snapshots/.tmp-snap-x/work/dump.log',
    logPath: '/var/lib/forkd/pool/snapshots/.tmp-snap-x/work/dump.log',
  });
/** A host tool's timeout (shape of exec()'s): the message names the tool, the details its command. */
const toolTimeout = () => new ForkdError('TIMEOUT', '/usr/bin/btrfs timed out after 60000 ms', { cmd: 'btrfs subvolume snapshot /var/lib/forkd/pool/a /var/lib/forkd/pool/b', exitCode: 137, stderrTail: '' });
/** Not a ForkdError at all: a Node error naming a host file. */
const rawError = () => Object.assign(new Error("ENOENT: no such file or directory, open '/var/lib/forkd/pool/snapshots/snap-x/memory/pstree.img'"), { code: 'ENOENT' });

const HOST = /\/(var|run|dev|proc|sys|usr|tmp)\//;

const info: SandboxInfo = sandboxInfo('sbx-aaaaaaaaaaaa');

/** Only what these tests call; anything else is a test bug. */
function failingService(): NodeService {
  const svc: Partial<NodeService> = {
    create: async () => info,
    list: async () => [info],
    get: async () => info,
    getSnapshot: async () => Promise.reject(new ForkdError('NOT_FOUND', 'no snapshot')),
    snapshot: async () => Promise.reject(criuFailure()),
    pause: async () => Promise.reject(toolTimeout()),
    resume: async () => Promise.reject(rawError()),
    fork: async () => Promise.reject(new ForkdError('FAILED_PRECONDITION', `sandbox ${info.id} is paused; fork one of its snapshots instead`)),
    buildTemplate: async () => Promise.reject(criuFailure()),
    // The tenant view checks whether a name is free before a build.
    templates: async () => [{ name: 'base', createdAt: info.createdAt }],
  };
  return new Proxy(svc as NodeService, {
    get: (t, k) =>
      (t as unknown as Record<string | symbol, unknown>)[k] ??
      (() => {
        throw new Error(`unexpected call ${String(k)}`);
      }),
  });
}

async function setup() {
  const store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
  const lines: string[] = [];
  const app = createApp({ svc: failingService(), control, logger: createLogger('debug', (l) => lines.push(l)) });
  const admin = (await control.keys.create({ format: 'forkd', admin: true }, undefined)).key;
  const tenant = (await control.keys.create({ format: 'forkd', tenant: 'acme', admin: false }, undefined)).key;
  const call = async (method: string, path: string, key: string, body = '{}') => {
    const r = await app.request(path, { method, body: method === 'GET' ? null : body, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } });
    return { status: r.status, header: r.headers.get('x-request-id'), text: await r.text() };
  };
  return { app, control, admin, tenant, call, lines };
}

test('an INTERNAL error reaches a tenant as code, a generic message and the request id: no host path, command or tool output', async () => {
  const { call, tenant, lines } = await setup();
  assert.equal((await call('POST', '/v1/sandboxes', tenant)).status, 201);
  const r = await call('POST', `/v1/sandboxes/${info.id}/snapshots`, tenant);
  assert.equal(r.status, 500);
  assert.match(r.header ?? '', /^req-[0-9a-f]{16}$/);
  const body = JSON.parse(r.text);
  assert.equal(body.error.code, 'INTERNAL');
  assert.equal(body.error.requestId, r.header);
  assert.equal(body.error.message, `internal error; the operator can find it by request id ${r.header}`);
  assert.equal(body.error.details, undefined);
  assert.doesNotMatch(r.text, HOST);
  assert.doesNotMatch(r.text, /runc|criu|dump\.log/);
  // The log has all of it under the same id.
  const logged = lines.map((l) => JSON.parse(l)).find((l) => l.requestId === r.header);
  assert.ok(logged, 'a log line carries the request id');
  assert.equal(logged.level, 'error');
  assert.match(logged.error, /criu dump failed/);
  assert.match(logged.details.cmd, /^runc /);
  assert.match(logged.details.logPath, /dump\.log$/);
});

test('tool errors of other codes and raw errors are hidden the same way; forkd\'s own messages stay', async () => {
  const { call, tenant } = await setup();
  await call('POST', '/v1/sandboxes', tenant);
  const timeout = await call('POST', `/v1/sandboxes/${info.id}/pause`, tenant);
  assert.equal(timeout.status, 504);
  assert.doesNotMatch(timeout.text, HOST);
  assert.equal(JSON.parse(timeout.text).error.code, 'TIMEOUT');
  const raw = await call('POST', `/v1/sandboxes/${info.id}/resume`, tenant);
  assert.equal(raw.status, 500);
  assert.doesNotMatch(raw.text, HOST);
  const own = JSON.parse((await call('POST', `/v1/sandboxes/${info.id}/fork`, tenant)).text);
  assert.equal(own.error.code, 'FAILED_PRECONDITION');
  assert.match(own.error.message, /fork one of its snapshots instead/);
  assert.match(own.error.requestId, /^req-/);
});

test('an admin key sees the details; the audit record has the request id', async () => {
  const { call, admin, control } = await setup();
  const r = await call('POST', `/v1/sandboxes/${info.id}/snapshots`, admin);
  const body = JSON.parse(r.text);
  assert.match(body.error.message, /criu dump failed/);
  assert.match(body.error.details.cmd, /^runc /);
  assert.equal(body.error.requestId, r.header);
  const rec = (await control.store.queryAudit({ limit: 10 })).find((a) => a.code === 'INTERNAL');
  assert.equal(rec?.requestId, r.header);
});

test('NDJSON error events are scrubbed for tenants too (template build)', async () => {
  const { call, tenant, lines } = await setup();
  const r = await call('POST', '/v1/templates', tenant, JSON.stringify({ name: 'py', setup: ['true'] }));
  assert.equal(r.status, 200);
  const ev = r.text.trim().split('\n').map((l) => JSON.parse(l)).find((e) => e.type === 'error');
  assert.ok(ev);
  assert.equal(ev.error.code, 'INTERNAL');
  assert.equal(ev.error.requestId, r.header);
  assert.doesNotMatch(JSON.stringify(ev), HOST);
  assert.ok(lines.some((l) => l.includes(r.header!) && l.includes('dump.log')));
});

test('every response carries a request id, errors or not; ids differ', async () => {
  const { app, admin } = await setup();
  const a = await app.request('/v1/sandboxes', { headers: { authorization: `Bearer ${admin}` } });
  const b = await app.request('/v1/health');
  const c = await app.request('/v1/nope', { headers: { authorization: `Bearer ${admin}` } });
  const ids = [a, b, c].map((r) => r.headers.get('x-request-id'));
  for (const id of ids) assert.match(id ?? '', /^req-[0-9a-f]{16}$/);
  assert.equal(new Set(ids).size, 3);
  assert.equal(((await c.json()) as { error: { requestId: string } }).error.requestId, ids[2]);
});

test('publicError keeps the tenant\'s own details and drops the host\'s', () => {
  const e = new ForkdError('FAILED_PRECONDITION', 'setup command failed (exit 1): make', { outputTail: 'make: *** No rule', cmd: 'bash -lc make', stderrTail: 'x' });
  const shown = publicError(e, 'req-1', false);
  assert.equal(shown.message, 'failed precondition; the operator can find it by request id req-1');
  const own = publicError(new ForkdError('INVALID_ARGUMENT', 'memoryMb: too small', { issues: [{ path: 'memoryMb' }], plan: 'x' }), 'req-2', false);
  assert.deepEqual(own, { code: 'INVALID_ARGUMENT', message: 'memoryMb: too small', details: { issues: [{ path: 'memoryMb' }] }, requestId: 'req-2' });
});
