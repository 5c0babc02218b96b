import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { ApiKeys } from './api-keys.js';

async function withKeys(fn: (a: ApiKeys, b: ApiKeys, dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-admin-key-'));
  const store = new SqliteControlStore(join(dir, 'control.db'));
  try {
    // Two replicas over one database.
    await fn(new ApiKeys(store), new ApiKeys(store), dir);
  } finally {
    await store.close();
    await rm(dir, { recursive: true, force: true });
  }
}

test('ensureAdminKey: a key the operator gave every replica is adopted once, and authenticates as admin', async () => {
  await withKeys(async (a, b, dir) => {
    const given = `forkd_${'ab12'.repeat(10)}`;
    const [fa, fb] = [join(dir, 'a.key'), join(dir, 'b.key')];
    await writeFile(fa, `${given}\n`);
    await writeFile(fb, `${given}\n`);
    const got = await Promise.all([a.ensureAdminKey(fa), b.ensureAdminKey(fb)]);
    assert.deepEqual(got, [given, given]);
    const who = await a.authenticate(given);
    assert.equal(who.admin, true);
    assert.equal((await a.list(who)).filter((k) => k.admin).length, 1);
    assert.equal((await readFile(fa, 'utf8')).trim(), given);
  });
});

test('ensureAdminKey: a malformed, a revoked or a non-admin key in the file is replaced, not adopted', async () => {
  await withKeys(async (a, _b, dir) => {
    const file = join(dir, 'admin.key');
    await writeFile(file, 'forkd_short\n');
    const first = await a.ensureAdminKey(file);
    assert.notEqual(first, 'forkd_short');
    const admin = await a.authenticate(first);
    const tenantKey = await a.create({ format: 'forkd', admin: false }, admin);
    await writeFile(file, `${tenantKey.key}\n`);
    const second = await a.ensureAdminKey(file);
    assert.notEqual(second, tenantKey.key);
    assert.equal((await a.authenticate(second)).admin, true);
    await a.revoke(admin.keyId, admin);
    await writeFile(file, `${first}\n`);
    const third = await a.ensureAdminKey(file);
    assert.notEqual(third, first);
    await assert.rejects(a.authenticate(first), { code: 'UNAUTHENTICATED' });
  });
});
