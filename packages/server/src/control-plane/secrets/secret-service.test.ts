import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError, type NodeCredential } from '@forkd/protocol';
import type { NodeService } from '../../node-contract/index.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { SecretCipher } from './secret-cipher.js';
import { SecretService } from './secret-service.js';

/** A node that only records setCredentials (and knows the sandboxes in `live`). */
function recordingNode(live: Set<string>) {
  const sets = new Map<string, NodeCredential[]>();
  const node = {
    async setCredentials(id: string, creds: NodeCredential[]) {
      if (!live.has(id)) throw new ForkdError('NOT_FOUND', `sandbox ${id} not found`);
      sets.set(id, creds);
    },
  } as unknown as NodeService;
  return { node, sets };
}

const VALUE = 'sk-plaintext-canary-7f3e9b';

test('no plaintext on disk: the SQLite file and its WAL hold the sealed value only; another key cannot open it', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-secrets-'));
  try {
    const store = new SqliteControlStore(join(dir, 'control.db'));
    const key = randomBytes(32);
    const { node, sets } = recordingNode(new Set(['sbx-aaaaaaaaaaaa']));
    const s = new SecretService(store, new SecretCipher(key), node);
    await s.setSecret('acme', 'TOKEN', VALUE);
    await s.setSecret('acme', 'TOKEN', `${VALUE}-rotated`);
    await s.createGrant('acme', 'sbx-aaaaaaaaaaaa', { secret: 'TOKEN', hosts: ['a.com'], header: 'Authorization: Bearer {secret}' });
    assert.equal(sets.get('sbx-aaaaaaaaaaaa')?.[0]?.headerValue, `Bearer ${VALUE}-rotated`);
    for (const f of await readdir(dir)) assert.ok(!(await readFile(join(dir, f))).includes(Buffer.from('sk-plaintext-canary')), `${f} holds the value`);
    const wrong = new SecretService(store, new SecretCipher(randomBytes(32)), node);
    await assert.rejects(wrong.push('sbx-aaaaaaaaaaaa'), (e: Error & { code?: string }) => e.code === 'INTERNAL' && !e.message.includes('canary'));
    await store.close();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('grants survive a restart: pushAll gives every live sandbox its set again and drops the grants of gone ones', async () => {
  const store = new SqliteControlStore(':memory:');
  const cipher = new SecretCipher(randomBytes(32));
  const live = new Set(['sbx-aaaaaaaaaaaa', 'sbx-bbbbbbbbbbbb']);
  const first = recordingNode(live);
  const s1 = new SecretService(store, cipher, first.node);
  await s1.setSecret('acme', 'TOKEN', VALUE);
  await s1.createGrant('acme', 'sbx-aaaaaaaaaaaa', { secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}' });
  await s1.createGrant('acme', 'sbx-bbbbbbbbbbbb', { secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}' });
  live.delete('sbx-bbbbbbbbbbbb');
  const restarted = recordingNode(live);
  await new SecretService(store, cipher, restarted.node).pushAll();
  assert.equal(restarted.sets.get('sbx-aaaaaaaaaaaa')?.[0]?.headerValue, VALUE);
  assert.deepEqual(await store.grants('sbx-bbbbbbbbbbbb'), []);
  await store.close();
});

test('a grant the node refuses is not kept; an expired grant is dropped when next read and left out of the set', async () => {
  const store = new SqliteControlStore(':memory:');
  const { node, sets } = recordingNode(new Set(['sbx-aaaaaaaaaaaa']));
  const s = new SecretService(store, new SecretCipher(randomBytes(32)), node);
  await s.setSecret('acme', 'TOKEN', VALUE);
  await assert.rejects(s.createGrant('acme', 'sbx-cccccccccccc', { secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}' }), /not found/);
  assert.deepEqual(await store.grants('sbx-cccccccccccc'), []);
  const g = await s.createGrant('acme', 'sbx-aaaaaaaaaaaa', { secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}', ttlSeconds: 1 });
  assert.equal(sets.get('sbx-aaaaaaaaaaaa')?.[0]?.expiresAt, g.expiresAt, 'the node gets the expiry and enforces it itself');
  await new Promise((r) => setTimeout(r, 1100));
  assert.deepEqual(await s.listGrants('sbx-aaaaaaaaaaaa'), []);
  await s.push('sbx-aaaaaaaaaaaa');
  assert.deepEqual(sets.get('sbx-aaaaaaaaaaaa'), []);
  await store.close();
});

test('per-call grants: in the set from the call until its release, beside the stored ones, never stored', async () => {
  const store = new SqliteControlStore(':memory:');
  const { node, sets } = recordingNode(new Set(['sbx-aaaaaaaaaaaa']));
  const s = new SecretService(store, new SecretCipher(randomBytes(32)), node);
  await s.setSecret('acme', 'TOKEN', VALUE);
  await s.createGrant('acme', 'sbx-aaaaaaaaaaaa', { secret: 'TOKEN', hosts: ['a.com'], header: 'A: {secret}' });
  const release = await s.callGrants('acme', 'sbx-aaaaaaaaaaaa', [{ secret: 'TOKEN', hosts: ['b.com'], header: 'B: x-{secret}' }]);
  assert.deepEqual(sets.get('sbx-aaaaaaaaaaaa')?.map((c) => c.headerValue), [VALUE, `x-${VALUE}`]);
  assert.equal((await store.grants('sbx-aaaaaaaaaaaa')).length, 1);
  assert.deepEqual((await s.listGrants('sbx-aaaaaaaaaaaa')).map((g) => !!g.perCall), [false, true]);
  await release();
  assert.deepEqual(sets.get('sbx-aaaaaaaaaaaa')?.map((c) => c.headerValue), [VALUE]);
  await assert.rejects(s.callGrants('acme', 'sbx-aaaaaaaaaaaa', [{ secret: 'NOPE', hosts: ['b.com'], header: 'B: {secret}' }]), /not found/);
  await store.close();
});
