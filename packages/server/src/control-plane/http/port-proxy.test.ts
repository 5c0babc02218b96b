import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testCipher } from '../../testing/test-cipher.js';
import { ApiKeys } from '../auth/api-keys.js';
import { AuthThrottle } from '../auth/auth-throttle.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { AccessTokens } from '../e2b/access-tokens.js';
import { authorizeProxy, hostTarget, proxyTarget } from './port-proxy.js';

test('host names: {port}-{id}.{domain} in any case, with a port or a trailing dot; nothing else', () => {
  assert.deepEqual(hostTarget('8000-sbx-abcdefabcdef.sbx.test', 'sbx.test'), { port: 8000, id: 'sbx-abcdefabcdef' });
  assert.deepEqual(hostTarget('49983-SBX-ABCDEFABCDEF.SBX.test.:443', 'sbx.test'), { port: 49983, id: 'sbx-abcdefabcdef' });
  for (const h of ['8000-sbx-abcdefabcdef.other.test', 'sbx-abcdefabcdef.sbx.test', 'x.8000-sbx-abcdefabcdef.sbx.test', '8000-sbx-abcdefabcdef.sbx.test.evil', 'api.sbx.test', '8000-sbx-abcdefabcdef.sbxxtest']) assert.equal(hostTarget(h, 'sbx.test'), undefined, h);
  assert.equal(hostTarget('8000-sbx-abcdefabcdef.sbx.test', undefined), undefined, 'no domain: no host names');
  assert.throws(() => proxyTarget('0-sbx-abcdefabcdef.sbx.test', '/', 'sbx.test'), /out of range/);
});

async function control(burst = 10_000) {
  const store = new SqliteControlStore(':memory:');
  const tokens = new AccessTokens(Buffer.alloc(32, 7));
  const c = { store, keys: new ApiKeys(store, new AuthThrottle({ burst })), quotas: new TenantQuotas(store), cipher: testCipher(), e2bTokens: tokens, close: () => store.close() };
  return { c, tokens };
}

const target = (id: string) => ({ id, port: 49999, path: '/execute' });
const headers = (h: Record<string, string>) => (n: string) => h[n];

test("the port proxy takes a sandbox's E2B tokens as E2B's SDKs send them, strips them, and takes no other sandbox's", async () => {
  const { c, tokens } = await control();
  const id = 'sbx-aaaaaaaaaaaa';
  try {
    // @e2b/code-interpreter sends both on every request to its server (port 49999).
    const both = { 'x-access-token': tokens.token(id), 'e2b-traffic-access-token': tokens.trafficToken(id) };
    assert.deepEqual(await authorizeProxy(c, target(id), headers(both)), { strip: ['x-access-token', 'e2b-traffic-access-token'] });
    assert.deepEqual(await authorizeProxy(c, target(id), headers({ 'e2b-traffic-access-token': tokens.trafficToken(id) })), { strip: ['x-access-token', 'e2b-traffic-access-token'] });
    await assert.rejects(authorizeProxy(c, target('sbx-bbbbbbbbbbbb'), headers(both)), { code: 'UNAUTHENTICATED' }, "one sandbox's tokens open no other");
    await assert.rejects(authorizeProxy(c, target(id), headers({ 'x-access-token': tokens.trafficToken(id) })), { code: 'UNAUTHENTICATED' }, 'the traffic token is not the envd token');
    // A wrong E2B token next to a key of the owner: the key decides (and its headers are stripped, not the token's).
    const admin = (await c.keys.create({ format: 'forkd', admin: true }, undefined)).key;
    assert.deepEqual(await authorizeProxy(c, target(id), headers({ 'x-access-token': 'f'.repeat(32), authorization: `Bearer ${admin}` })), { strip: ['authorization', 'x-api-key'] });
    const hand = { ...c, e2bTokens: undefined };
    await assert.rejects(authorizeProxy(hand, target(id), headers(both)), { code: 'UNAUTHENTICATED' }, 'a control plane without E2B tokens takes none');
  } finally {
    await c.close();
  }
});

test('wrong E2B tokens spend the same per-source budget as wrong keys and proxy tokens', async () => {
  const { c } = await control(3);
  try {
    for (let i = 0; i < 3; i++) await assert.rejects(authorizeProxy(c, target('sbx-aaaaaaaaaaaa'), headers({ 'x-access-token': `${i}`.repeat(32) }), '10.0.0.9'), { code: 'UNAUTHENTICATED' });
    await assert.rejects(authorizeProxy(c, target('sbx-aaaaaaaaaaaa'), headers({ 'e2b-traffic-access-token': 'a'.repeat(32) }), '10.0.0.9'), { code: 'RESOURCE_EXHAUSTED' });
    await assert.rejects(authorizeProxy(c, target('sbx-aaaaaaaaaaaa'), headers({ 'x-access-token': 'a'.repeat(32) }), '10.0.0.10'), { code: 'UNAUTHENTICATED' }, 'another source is not held back');
  } finally {
    await c.close();
  }
});
