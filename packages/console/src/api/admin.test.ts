import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, type FetchLike } from '../api.js';
import { adminByPrefix, isAdminKey } from './admin.js';

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });
const key = (prefix: string, admin: boolean, revokedAt?: string) => ({ id: `key-${prefix}`, tenant: 't', prefix, admin, createdAt: '', ...(revokedAt ? { revokedAt } : {}) });

test('adminByPrefix: all admin, none, or both kinds (cannot tell)', () => {
  assert.equal(adminByPrefix([{ admin: true }]), true);
  assert.equal(adminByPrefix([{ admin: false }, { admin: false }]), false);
  assert.equal(adminByPrefix([{ admin: true }, { admin: false }]), undefined);
});

test('isAdminKey reads the key list by prefix (no refused call for a tenant key); asks the admin-only listing only when both kinds share the prefix', async () => {
  const calls: string[] = [];
  const client = (k: string, keys: unknown[], allTenants: Response) => {
    const f: FetchLike = async (url) => (calls.push(url), url.startsWith('/v1/keys') ? json({ keys }) : allTenants);
    return new ApiClient(k, f);
  };
  const denied = () => json({ error: { code: 'PERMISSION_DENIED', message: 'no' } }, 403);
  assert.equal(await isAdminKey(client('fk_abcdXYZ', [key('fk_abcd', true), key('fk_zzzz', false)], denied())), true);
  assert.equal(await isAdminKey(client('fk_zzzzXYZ', [key('fk_zzzz', false), key('fk_zzzz', true, '2026-01-01')], denied())), false, 'revoked keys do not count');
  assert.deepEqual(calls, ['/v1/keys', '/v1/keys']);
  calls.length = 0;
  assert.equal(await isAdminKey(client('fk_abcdXYZ', [key('fk_abcd', true), key('fk_abcd', false)], denied())), false);
  assert.equal(await isAdminKey(client('fk_abcdXYZ', [key('fk_abcd', true), key('fk_abcd', false)], json({ sandboxes: [] }))), true);
  assert.deepEqual(calls, ['/v1/keys', '/v1/sandboxes?allTenants=true&limit=1', '/v1/keys', '/v1/sandboxes?allTenants=true&limit=1']);
});
