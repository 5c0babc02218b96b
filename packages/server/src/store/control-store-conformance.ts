import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { ControlStore, KeyRecord } from './control-store.js';
import { templateBuildConformance } from './template-build-conformance.js';

const key = (id: string, tenant: string, extra: Partial<KeyRecord> = {}): KeyRecord => ({
  id,
  tenant,
  hash: `hash-of-${id}`,
  prefix: 'forkd_abcd',
  admin: false,
  createdAt: `2026-01-01T00:00:0${id.length % 10}.000Z`,
  ...extra,
});

const audit = (at: string, extra: Record<string, unknown> = {}) => ({ at, operation: 'GET /v1/sandboxes', code: 'OK', status: 200, durationMs: 1.5, ...extra });

/**
 * The contract of a ControlStore, as node:test tests: every implementation
 * (SQLite today, PostgreSQL next) runs them with its own `open`, which must
 * give an empty store each time it is called.
 */
export function controlStoreConformance(name: string, open: () => Promise<ControlStore>): void {
  describe(`ControlStore conformance: ${name}`, () => {
    let store: ControlStore;
    before(async () => {
      store = await open();
    });
    after(async () => {
      await store.close();
    });

    test('keys: inserted, found by hash, listed by tenant in creation order', async () => {
      await store.insertKey(key('key-a1', 'acme', { name: 'first', createdAt: '2026-01-01T00:00:01.000Z' }));
      await store.insertKey(key('key-a2', 'acme', { admin: true, createdAt: '2026-01-01T00:00:02.000Z' }));
      await store.insertKey(key('key-b1', 'beta', { createdAt: '2026-01-01T00:00:03.000Z' }));
      const found = await store.keyByHash('hash-of-key-a1');
      assert.deepEqual(found, key('key-a1', 'acme', { name: 'first', createdAt: '2026-01-01T00:00:01.000Z' }));
      assert.equal((await store.keyByHash('hash-of-key-a2'))?.admin, true);
      assert.equal(await store.keyByHash('no-such-hash'), undefined);
      assert.deepEqual((await store.listKeys('acme')).map((k) => k.id), ['key-a1', 'key-a2']);
      assert.deepEqual((await store.listKeys('beta')).map((k) => k.id), ['key-b1']);
      assert.deepEqual((await store.listKeys()).map((k) => k.id), ['key-a1', 'key-a2', 'key-b1']);
      assert.deepEqual(await store.listKeys('nobody'), []);
    });

    test('keys: revoked once; a wrong tenant or an unknown id revokes nothing', async () => {
      await store.insertKey(key('key-r1', 'acme', { hash: 'hash-r1' }));
      assert.equal(await store.revokeKey('key-r1', '2026-02-01T00:00:00.000Z', 'beta'), false, 'another tenant cannot revoke it');
      assert.equal((await store.keyByHash('hash-r1'))?.revokedAt, undefined);
      assert.equal(await store.revokeKey('key-nope', '2026-02-01T00:00:00.000Z'), false);
      assert.equal(await store.revokeKey('key-r1', '2026-02-01T00:00:00.000Z', 'acme'), true);
      assert.equal((await store.keyByHash('hash-r1'))?.revokedAt, '2026-02-01T00:00:00.000Z');
      assert.equal(await store.revokeKey('key-r1', '2026-02-02T00:00:00.000Z'), false, 'already revoked');
      assert.equal((await store.keyByHash('hash-r1'))?.revokedAt, '2026-02-01T00:00:00.000Z', 'the first revocation time stays');
    });

    test('owners: set replaces, claim keeps the first owner, drop forgets, owned lists a tenant\'s ids of a kind', async () => {
      assert.equal(await store.owner('sandbox', 'sbx-o1'), undefined);
      await store.setOwner('sandbox', 'sbx-o1', 'acme');
      assert.equal(await store.owner('sandbox', 'sbx-o1'), 'acme');
      await store.setOwner('sandbox', 'sbx-o1', 'beta');
      assert.equal(await store.owner('sandbox', 'sbx-o1'), 'beta', 'setOwner replaces');
      assert.equal(await store.claimOwner('template', 'py', 'acme'), 'acme', 'the first claimer wins');
      assert.equal(await store.claimOwner('template', 'py', 'beta'), 'acme', 'the second claimer gets the first owner back');
      assert.equal(await store.owner('template', 'py'), 'acme');
      assert.equal(await store.claimOwner('template', 'py', 'acme'), 'acme', 'claiming what one owns is a win');
      assert.equal(await store.owner('sandbox', 'py'), undefined, 'kinds are separate');
      await store.setOwner('sandbox', 'sbx-o2', 'acme');
      await store.setOwner('sandbox', 'sbx-o3', 'acme');
      assert.deepEqual([...(await store.owned('sandbox', 'acme'))].sort(), ['sbx-o2', 'sbx-o3']);
      assert.deepEqual([...(await store.owned('template', 'acme'))], ['py']);
      const all = await store.owners('sandbox');
      assert.equal(all.get('sbx-o2'), 'acme');
      assert.ok([...all.values()].every((t) => typeof t === 'string'));
      assert.equal((await store.owners('template')).get('py'), 'acme');
      await store.dropOwner('sandbox', 'sbx-o2');
      assert.equal(await store.owner('sandbox', 'sbx-o2'), undefined);
      assert.deepEqual([...(await store.owned('sandbox', 'acme'))], ['sbx-o3']);
      await store.dropOwner('template', 'py');
      assert.equal(await store.claimOwner('template', 'py', 'beta'), 'beta', 'a dropped name is free again');
    });

    test('owners: of claims racing for one id, exactly one wins and all see it', async () => {
      const tenants = ['t1', 't2', 't3', 't4', 't5', 't6'];
      const results = await Promise.all(tenants.map((t) => store.claimOwner('template', 'raced', t)));
      const winner = results[0]!;
      assert.ok(tenants.includes(winner));
      assert.deepEqual(results, tenants.map(() => winner));
      assert.equal(await store.owner('template', 'raced'), winner);
    });

    test('token hashes: set, replaced, per sandbox', async () => {
      assert.equal(await store.tokenHash('sbx-t1'), undefined);
      await store.setTokenHash('sbx-t1', 'aa');
      await store.setTokenHash('sbx-t2', 'bb');
      assert.equal(await store.tokenHash('sbx-t1'), 'aa');
      await store.setTokenHash('sbx-t1', 'cc');
      assert.equal(await store.tokenHash('sbx-t1'), 'cc');
      assert.equal(await store.tokenHash('sbx-t2'), 'bb');
    });

    test('tenant limits: replaced whole, null kept as a value, {} removes them', async () => {
      assert.equal(await store.tenantLimits('acme'), undefined);
      await store.setTenantLimits('acme', { runningSandboxes: 2, memoryMb: null });
      assert.deepEqual(await store.tenantLimits('acme'), { runningSandboxes: 2, memoryMb: null });
      await store.setTenantLimits('acme', { cpus: 4 });
      assert.deepEqual(await store.tenantLimits('acme'), { cpus: 4 }, 'replaced, not merged');
      await store.setTenantLimits('beta', { snapshots: 10 });
      await store.setTenantLimits('acme', {});
      assert.equal(await store.tenantLimits('acme'), undefined);
      assert.deepEqual(await store.tenantLimits('beta'), { snapshots: 10 });
      await store.setNetworkSetting('tenant', 'acme', { egress: false });
      await store.setNetworkSetting('template', 'acme', { mode: 'egress' });
      assert.deepEqual(await store.networkSetting('tenant', 'acme'), { egress: false });
      assert.deepEqual(await store.networkSetting('template', 'acme'), { mode: 'egress' }, 'scopes apart');
      await store.setNetworkSetting('tenant', 'acme', undefined);
      assert.equal(await store.networkSetting('tenant', 'acme'), undefined);
    });

    test('policies: per scope and id, replaced whole, {} removes them', async () => {
      assert.equal(await store.policy('sandbox', 'sbx-p1'), undefined);
      await store.setPolicy('sandbox', 'sbx-p1', { exec: { deny: ['^rm '] }, maxDurationSeconds: 60 });
      await store.setPolicy('tenant', 'sbx-p1', { network: 'off' });
      assert.deepEqual(await store.policy('sandbox', 'sbx-p1'), { exec: { deny: ['^rm '] }, maxDurationSeconds: 60 });
      assert.deepEqual(await store.policy('tenant', 'sbx-p1'), { network: 'off' }, 'scopes are separate');
      await store.setPolicy('sandbox', 'sbx-p1', { files: { hidden: ['/root/.ssh'] } });
      assert.deepEqual(await store.policy('sandbox', 'sbx-p1'), { files: { hidden: ['/root/.ssh'] } }, 'replaced, not merged');
      await store.setPolicy('sandbox', 'sbx-p1', {});
      assert.equal(await store.policy('sandbox', 'sbx-p1'), undefined);
      assert.deepEqual(await store.policy('tenant', 'sbx-p1'), { network: 'off' });
    });

    test('audit: appended records come back newest first with every field; filters narrow them', async () => {
      await store.appendAudit(audit('2026-03-01T00:00:00.000Z', { keyId: 'key-1', tenant: 'acme', sandboxId: 'sbx-a', target: '/etc', requestId: 'req-1' }));
      await store.appendAudit(audit('2026-03-02T00:00:00.000Z', { tenant: 'beta', operation: 'POST /v1/sandboxes', status: 201 }));
      await store.appendAudit(audit('2026-03-03T00:00:00.000Z', { tenant: 'acme', code: 'NOT_FOUND', status: 404, sandboxId: 'sbx-b' }));
      await store.appendAudit(audit('2026-03-04T00:00:00.000Z', { operation: 'lost' }));
      const all = await store.queryAudit({ limit: 100 });
      assert.equal(all.length, 4);
      assert.deepEqual(all.map((r) => r.at), ['2026-03-04T00:00:00.000Z', '2026-03-03T00:00:00.000Z', '2026-03-02T00:00:00.000Z', '2026-03-01T00:00:00.000Z']);
      const first = all[3]!;
      assert.equal(typeof first.id, 'number');
      const { id: _, ...rest } = first;
      assert.deepEqual(rest, audit('2026-03-01T00:00:00.000Z', { keyId: 'key-1', tenant: 'acme', sandboxId: 'sbx-a', target: '/etc', requestId: 'req-1' }));
      assert.equal(all[0]!.tenant, undefined, 'no tenant stays absent');
      assert.deepEqual((await store.queryAudit({ limit: 100, tenant: 'acme' })).map((r) => r.at), ['2026-03-03T00:00:00.000Z', '2026-03-01T00:00:00.000Z']);
      assert.deepEqual((await store.queryAudit({ limit: 100, sandbox: 'sbx-b' })).map((r) => r.sandboxId), ['sbx-b']);
      assert.deepEqual((await store.queryAudit({ limit: 100, operation: 'POST /v1/sandboxes' })).map((r) => r.tenant), ['beta']);
      assert.deepEqual((await store.queryAudit({ limit: 100, code: 'NOT_FOUND' })).map((r) => r.status), [404]);
      assert.equal((await store.queryAudit({ limit: 100, since: '2026-03-02T00:00:00.000Z' })).length, 3);
      assert.equal((await store.queryAudit({ limit: 2 })).length, 2, 'limit');
      const before = await store.queryAudit({ limit: 100, before: first.id + 2 });
      assert.deepEqual(before.map((r) => r.at), ['2026-03-02T00:00:00.000Z', '2026-03-01T00:00:00.000Z'], 'before: older ids, newest first');
      const after = await store.queryAudit({ limit: 100, after: first.id });
      assert.deepEqual(after.map((r) => r.at), ['2026-03-02T00:00:00.000Z', '2026-03-03T00:00:00.000Z', '2026-03-04T00:00:00.000Z'], 'after: newer ids, oldest first');
    });

    test('audit: prune deletes what is older than the cut and says how many', async () => {
      const n = (await store.queryAudit({ limit: 1000 })).length;
      await store.appendAudit(audit('2020-01-01T00:00:00.000Z', { operation: 'old-1' }));
      await store.appendAudit(audit('2020-01-02T00:00:00.000Z', { operation: 'old-2' }));
      await store.appendAudit(audit('2030-01-01T00:00:00.000Z', { operation: 'new' }));
      assert.equal(await store.pruneAudit('2020-01-02T00:00:00.000Z'), 1, 'strictly older only');
      assert.equal(await store.pruneAudit('2021-01-01T00:00:00.000Z'), 1);
      assert.equal(await store.pruneAudit('2021-01-01T00:00:00.000Z'), 0);
      const left = (await store.queryAudit({ limit: 1000 })).map((r) => r.operation);
      assert.equal(left.length, n + 1);
      assert.ok(left.includes('new') && !left.includes('old-1') && !left.includes('old-2'));
    });

    test('secrets and grants: sealed bytes kept as given, names listed per tenant, grants per sandbox', async () => {
      await store.putSecret('acme', 'TOKEN', Buffer.from([1, 2, 3]), '2026-01-01T00:00:00.000Z');
      await store.putSecret('acme', 'TOKEN', Buffer.from([4, 5]), '2026-01-02T00:00:00.000Z');
      await store.putSecret('beta', 'TOKEN', Buffer.from([9]), '2026-01-01T00:00:00.000Z');
      const s = await store.secret('acme', 'TOKEN');
      assert.deepEqual(s && { ...s, sealed: [...s.sealed] }, { tenant: 'acme', name: 'TOKEN', sealed: [4, 5], createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z' });
      assert.deepEqual(await store.listSecrets('acme'), [{ tenant: 'acme', name: 'TOKEN', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z' }]);
      assert.equal(await store.secret('gamma', 'TOKEN'), undefined);
      const g = { id: 'grt-0000000000000001', tenant: 'acme', sandboxId: 'sbx-a', secret: 'TOKEN', hosts: ['a.com'], methods: ['GET'], header: 'A: {secret}', createdAt: '2026-01-01T00:00:00.000Z', expiresAt: '2026-01-01T01:00:00.000Z' };
      await store.insertGrant(g);
      await store.insertGrant({ ...g, id: 'grt-0000000000000002', sandboxId: 'sbx-b', methods: undefined, expiresAt: undefined });
      assert.deepEqual(await store.grants('sbx-a'), [g]);
      assert.deepEqual((await store.grants()).map((x) => x.id), ['grt-0000000000000001', 'grt-0000000000000002']);
      assert.equal(await store.deleteGrant(g.id), true);
      assert.equal(await store.deleteGrant(g.id), false);
      assert.equal(await store.deleteSecret('acme', 'TOKEN'), true);
      assert.equal(await store.deleteSecret('acme', 'TOKEN'), false);
      assert.ok(await store.secret('beta', 'TOKEN'));
    });

    test('quota reservations: per tenant, bound sandboxes appended, dropped; expired ones are not listed', async () => {
      const demand = { runningSandboxes: 1, memoryMb: 512, cpus: 1, diskMb: 1024, snapshots: 0 };
      await store.putReservation({ id: 'qr-1', tenant: 'acme', demand }, 60_000);
      await store.putReservation({ id: 'qr-2', tenant: 'acme', demand: { ...demand, runningSandboxes: 3 } }, 60_000);
      await store.putReservation({ id: 'qr-3', tenant: 'beta', demand }, 60_000);
      await store.putReservation({ id: 'qr-4', tenant: 'acme', demand }, 1);
      await Promise.all([store.bindReservation('qr-2', 'sbx-a'), store.bindReservation('qr-2', 'sbx-b')]);
      await new Promise((r) => setTimeout(r, 20));
      const got = await store.reservations('acme');
      assert.deepEqual(got.map((r) => [r.id, r.tenant, r.demand.runningSandboxes, [...r.sandboxIds].sort()]), [['qr-1', 'acme', 1, []], ['qr-2', 'acme', 3, ['sbx-a', 'sbx-b']]]);
      assert.deepEqual(got[0]!.demand, demand);
      await store.dropReservation('qr-1');
      await store.dropReservation('qr-1');
      assert.deepEqual((await store.reservations('acme')).map((r) => r.id), ['qr-2']);
      assert.deepEqual((await store.reservations('beta')).map((r) => r.id), ['qr-3']);
    });

    test('approvals: listed oldest first per tenant until decided or expired; decided once, by the right tenant; decisions read back', async () => {
      // Minutes from now (a put sweeps what expired by the wall clock).
      const t0 = Date.now();
      const at = (m: number) => new Date(t0 + m * 60_000).toISOString();
      const info = (id: string, tenant: string, created: number, expires: number) => ({ id, sandbox: 'sbx-a', tenant, kind: 'exec', command: 'git push', rule: 'r', createdAt: at(created), expiresAt: at(expires) });
      await store.putApproval(info('apr-2', 'acme', 2, 60));
      await store.putApproval({ ...info('apr-1', 'acme', 1, 60), context: { env: { A: '1' }, cwd: '/root' } });
      await store.putApproval(info('apr-3', 'beta', 3, 60));
      await store.putApproval(info('apr-old', 'acme', 0, 5));
      const now = at(10);
      assert.deepEqual((await store.pendingApprovals('acme', now)).map((a) => a.id), ['apr-1', 'apr-2']);
      assert.deepEqual((await store.pendingApprovals(undefined, now)).map((a) => a.id), ['apr-1', 'apr-2', 'apr-3']);
      assert.deepEqual((await store.pendingApprovals('acme', now))[0]!.context, { env: { A: '1' }, cwd: '/root' });
      assert.equal(await store.decideApproval('apr-1', 'approved', 'beta', now), undefined, "another tenant's");
      assert.equal(await store.decideApproval('apr-old', 'approved', undefined, now), undefined, 'expired');
      assert.equal((await store.decideApproval('apr-1', 'approved', 'acme', now))?.id, 'apr-1');
      assert.equal(await store.decideApproval('apr-1', 'denied', undefined, now), undefined, 'once');
      assert.equal((await store.decideApproval('apr-3', 'denied', undefined, now))?.tenant, 'beta');
      assert.deepEqual([...(await store.approvalDecisions(['apr-1', 'apr-2', 'apr-3', 'apr-none']))].sort(), [['apr-1', 'approved'], ['apr-3', 'denied']]);
      assert.deepEqual((await store.pendingApprovals(undefined, now)).map((a) => a.id), ['apr-2']);
      for (const id of ['apr-1', 'apr-2', 'apr-3', 'apr-old']) await store.dropApproval(id);
      assert.deepEqual(await store.pendingApprovals(undefined, at(0)), []);
      assert.deepEqual(await store.approvalDecisions([]), new Map());
    });

    templateBuildConformance(() => store.templateBuilds);
  });

  test(`ControlStore conformance: ${name}: close settles, and a fresh store is empty; ping answers while it is open, not after`, async () => {
    const s = await open();
    await s.ping();
    assert.deepEqual(await s.listKeys(), []);
    assert.deepEqual(await s.queryAudit({ limit: 10 }), []);
    await s.close();
    await assert.rejects(s.ping());
  });
}
