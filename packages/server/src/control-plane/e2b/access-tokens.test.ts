import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AccessTokens, fileSignature, signingRefusal } from './access-tokens.js';

test("the SDK's signature test vector", () => {
  assert.equal(fileSignature('hello.txt', 'read', 'user', '0tQG31xiMp0IOQfaz9dcwi72L1CPo8e0'), 'v1_gUtH/s9YCJWgCizjfUxuWfhFE4QSydOWEIIvfLwDr6E');
});

test('tokens are per sandbox, stable, and not the secret', () => {
  const t = new AccessTokens(Buffer.alloc(32, 7));
  assert.equal(t.token('sbx-aaaaaaaaaaaa'), t.token('sbx-aaaaaaaaaaaa'));
  assert.notEqual(t.token('sbx-aaaaaaaaaaaa'), t.token('sbx-bbbbbbbbbbbb'));
  assert.match(t.token('sbx-aaaaaaaaaaaa'), /^[0-9a-f]{32}$/);
  assert.equal(t.matches('sbx-aaaaaaaaaaaa', t.token('sbx-aaaaaaaaaaaa')), true);
  assert.equal(t.matches('sbx-aaaaaaaaaaaa', t.token('sbx-bbbbbbbbbbbb')), false);
  assert.equal(t.matches('sbx-aaaaaaaaaaaa', undefined), false);
  assert.notEqual(new AccessTokens(Buffer.alloc(32, 8)).token('sbx-aaaaaaaaaaaa'), t.token('sbx-aaaaaaaaaaaa'));
});

test('/files signing is checked in the reference order, with its messages', () => {
  const token = 'tok';
  const now = 1_000_000;
  const q = (over: Partial<Parameters<typeof signingRefusal>[0]> = {}) => ({ path: 'a.txt', username: undefined, signature: undefined, expiration: undefined, ...over });
  assert.equal(signingRefusal(q(), 'read', token, 'tok', now), undefined);
  assert.equal(signingRefusal(q(), 'read', token, 'other', now), 'access token present in header but does not match');
  assert.equal(signingRefusal(q(), 'read', token, undefined, now), 'missing signature query parameter');
  assert.equal(signingRefusal(q({ signature: 'v1_x' }), 'read', token, undefined, now), 'invalid signature');
  const good = fileSignature('a.txt', 'write', 'root', token, String(now + 10));
  assert.equal(signingRefusal(q({ signature: good, username: 'root', expiration: String(now + 10) }), 'write', token, undefined, now), undefined);
  // The op is part of what is signed: a write signature does not read.
  assert.equal(signingRefusal(q({ signature: good, username: 'root', expiration: String(now + 10) }), 'read', token, undefined, now), 'invalid signature');
  const old = fileSignature('a.txt', 'read', '', token, String(now - 10));
  assert.equal(signingRefusal(q({ signature: old, expiration: String(now - 10) }), 'read', token, undefined, now), 'signature is already expired');
});

test('replicas sharing secrets.key give and accept the same tokens; a state dir with its own e2b-token.secret keeps it', async () => {
  const dirs = [await mkdtemp(join(tmpdir(), 'forkd-tokens-')), await mkdtemp(join(tmpdir(), 'forkd-tokens-'))] as const;
  try {
    const key = Buffer.alloc(32, 3);
    const [a, b] = [await AccessTokens.open(dirs[0], key), await AccessTokens.open(dirs[1], key)];
    assert.equal(a.token('sbx-aaaaaaaaaaaa'), b.token('sbx-aaaaaaaaaaaa'));
    assert.equal(b.matches('sbx-aaaaaaaaaaaa', a.trafficToken('sbx-aaaaaaaaaaaa')), false, 'a traffic token is not an access token');
    assert.notEqual(a.token('sbx-aaaaaaaaaaaa'), new AccessTokens(key).token('sbx-aaaaaaaaaaaa'), 'derived, not the key itself');
    assert.notEqual((await AccessTokens.open(dirs[0], Buffer.alloc(32, 4))).token('sbx-aaaaaaaaaaaa'), a.token('sbx-aaaaaaaaaaaa'));
    assert.deepEqual(await readdir(dirs[0]), [], 'nothing written beside the shared key');
    await writeFile(join(dirs[1], 'e2b-token.secret'), Buffer.alloc(32, 9));
    assert.equal((await AccessTokens.open(dirs[1], key)).token('sbx-aaaaaaaaaaaa'), new AccessTokens(Buffer.alloc(32, 9)).token('sbx-aaaaaaaaaaaa'), 'an existing secret file wins');
  } finally {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  }
});
