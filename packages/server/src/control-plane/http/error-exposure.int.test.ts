import { testCipher } from '../../testing/test-cipher.js';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { createLogger } from '../../shared/logger.js';
import { ApiKeys } from '../auth/api-keys.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { createTestNode, isRoot, orphans, type TestNode } from '../../testing/test-node.js';
import { createApp } from './app.js';

/**
 * A real INTERNAL error (CRIU refusing a damaged image) through the real
 * API: a tenant sees the code, a generic message and the request id; the
 * server's log and an admin key see CRIU's words, the command and the paths.
 */
describe('errors as tenants and admins see them (real CRIU)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  const lines: string[] = [];
  let call: (method: string, path: string, key: string, body?: unknown) => Promise<{ status: number; requestId: string | null; text: string; json: any }>;
  let tenant = '';
  let admin = '';
  before(async () => {
    node = await createTestNode();
    const store = new SqliteControlStore(':memory:');
    const control = { store, keys: new ApiKeys(store), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
    const app = createApp({ svc: node.service, control, logger: createLogger('info', (l) => lines.push(l)) });
    admin = (await control.keys.create({ format: 'forkd', admin: true }, undefined)).key;
    tenant = (await control.keys.create({ format: 'forkd', tenant: 'acme', admin: false }, undefined)).key;
    call = async (method, path, key, body) => {
      const r = await app.request(path, { method, body: body === undefined ? null : JSON.stringify(body), headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } });
      const text = await r.text();
      return { status: r.status, requestId: r.headers.get('x-request-id'), text, json: text ? JSON.parse(text) : null };
    };
  });
  after(async () => node?.dispose());

  /** A snapshot of a tenant's sandbox whose process tree image is cut short: CRIU cannot restore it. */
  async function damagedSnapshot(key: string): Promise<string> {
    const s = await call('POST', '/v1/sandboxes', key, { memoryMb: 128 });
    assert.equal(s.status, 201, s.text);
    const snap = await call('POST', `/v1/sandboxes/${s.json.id}/snapshots`, key, {});
    assert.equal(snap.status, 201, snap.text);
    await truncate(join(node.manager.snapshotDir(snap.json.id), 'memory', 'pstree.img'), 3);
    return snap.json.id;
  }

  test('a tenant: INTERNAL, a generic message with the request id, no host path, command or CRIU output', async () => {
    const snap = await damagedSnapshot(tenant);
    const r = await call('POST', `/v1/snapshots/${snap}/fork`, tenant, { count: 1 });
    assert.equal(r.status, 500, r.text);
    assert.equal(r.json.error.code, 'INTERNAL');
    assert.match(r.requestId ?? '', /^req-[0-9a-f]{16}$/);
    assert.equal(r.json.error.requestId, r.requestId);
    assert.equal(r.json.error.message, `internal error; the operator can find it by request id ${r.requestId}`);
    assert.equal(r.json.error.details, undefined);
    assert.doesNotMatch(r.text, /\/(var|run|dev|tmp|proc|sys)\//, 'no host path');
    assert.doesNotMatch(r.text, /criu|runc|\.img|\.log/i, 'no tool or its output');
    // The operator finds all of it under that id.
    const logged = lines.map((l) => JSON.parse(l)).find((l) => l.requestId === r.requestId);
    assert.ok(logged, 'the log line carries the request id');
    assert.match(logged.error, /criu restore failed/);
    assert.match(String(logged.details?.cmd), /runc .*restore/);
    assert.match(String(logged.details?.logPath), /restore\.log$/);
  });

  test('an admin key gets the details', async () => {
    const snap = await damagedSnapshot(admin);
    const r = await call('POST', `/v1/snapshots/${snap}/fork`, admin, { count: 1 });
    assert.equal(r.json.error.code, 'INTERNAL');
    assert.match(r.json.error.message, /criu restore failed/);
    assert.match(String(r.json.error.details?.cmd), /restore/);
    assert.equal(r.json.error.requestId, r.requestId);
  });

  test('the failed forks left nothing behind', async () => {
    for (const s of await node.manager.list()) await node.manager.delete(s.id);
    await node.manager.settled();
    assert.deepEqual(await orphans(node), []);
  });
});
