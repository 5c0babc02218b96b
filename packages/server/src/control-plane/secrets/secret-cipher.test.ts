import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadSecretKey, SecretCipher } from './secret-cipher.js';

test('sealed values open with the same key and associated data only', () => {
  const a = new SecretCipher(randomBytes(32));
  const sealed = a.seal('sk-live-1234567890', 'acme\0TOKEN');
  assert.ok(!sealed.includes(Buffer.from('sk-live-1234567890')));
  assert.equal(a.open(sealed, 'acme\0TOKEN'), 'sk-live-1234567890');
  assert.notDeepEqual(a.seal('sk-live-1234567890', 'acme\0TOKEN'), sealed, 'a fresh IV each time');
  assert.throws(() => new SecretCipher(randomBytes(32)).open(sealed, 'acme\0TOKEN'), (e: Error & { code?: string }) => e.code === 'INTERNAL' && !e.message.includes('sk-live'));
  assert.throws(() => a.open(sealed, 'beta\0TOKEN'), /does not open/);
  const tampered = Buffer.from(sealed);
  tampered[tampered.length - 1]! ^= 1;
  assert.throws(() => a.open(tampered, 'acme\0TOKEN'), /does not open/);
  assert.throws(() => a.open(Buffer.from([1, 2, 3]), 'x'), /malformed/);
  assert.throws(() => new SecretCipher(randomBytes(16)), /32 bytes/);
});

test('the key file is made once, owner-only, and read back the same', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-secret-key-'));
  try {
    const f = join(dir, 'secrets.key');
    const k1 = loadSecretKey(f);
    assert.equal(k1.length, 32);
    assert.equal((await stat(f)).mode & 0o777, 0o600);
    assert.deepEqual(loadSecretKey(f), k1);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
