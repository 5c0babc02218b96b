import { test } from 'node:test';
import assert from 'node:assert/strict';
import { actingAs } from './acting-tenant.js';

test('an admin key may act as a named tenant; any other key naming one is refused; a bad name is invalid', () => {
  const admin = { keyId: 'key-a', tenant: 'ops', admin: true };
  const user = { keyId: 'key-u', tenant: 'acme', admin: false };
  assert.deepEqual(actingAs(admin, undefined), admin);
  assert.deepEqual(actingAs(admin, 'acme'), { keyId: 'key-a', tenant: 'acme', admin: true });
  assert.deepEqual(actingAs(user, undefined), user);
  assert.throws(() => actingAs(user, 'beta'), /needs an admin key/);
  assert.throws(() => actingAs(admin, 'Bad Name'), /tenant/);
});
