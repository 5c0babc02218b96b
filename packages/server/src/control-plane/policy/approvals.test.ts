import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, type ApprovalInfo } from '@forkd/protocol';
import { after } from 'node:test';
import { Approvals, type PendingCall } from './approvals.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';

// The approvals' timers do not hold the daemon's event loop; this test's must be held.
const keepAlive = setInterval(() => {}, 1000);
after(() => clearInterval(keepAlive));

const call = (tenant: string, timeoutSeconds = 60): PendingCall => ({ sandbox: 'sbx-1', tenant, kind: 'exec', command: 'git push', rule: 'sandbox:exec.requireApproval[0] "^git push"', timeoutSeconds });

function waiting(a: Approvals, c: PendingCall, signal?: AbortSignal): { info: Promise<ApprovalInfo>; outcome: ReturnType<Approvals['wait']> } {
  let seen!: (i: ApprovalInfo) => void;
  const info = new Promise<ApprovalInfo>((r) => (seen = r));
  return { info, outcome: a.wait(c, seen, signal) };
}

test('approvals: listed per tenant, approved or denied once, another tenant sees NOT_FOUND', async () => {
  const a = new Approvals();
  const one = waiting(a, call('acme'));
  const two = waiting(a, call('beta'));
  const i1 = await one.info;
  const i2 = await two.info;
  assert.deepEqual((await a.list('acme')).map((x) => x.id), [i1.id]);
  assert.equal((await a.list(undefined)).length, 2, 'admin sees all');
  await assert.rejects(a.decide(i1.id, true, 'beta'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  await a.decide(i1.id, true, 'acme');
  assert.equal(await one.outcome, 'approved');
  await assert.rejects(a.decide(i1.id, false, undefined), /not found/, 'decided once');
  await a.decide(i2.id, false, undefined);
  assert.equal(await two.outcome, 'denied');
  assert.deepEqual(await a.list(undefined), []);
});

test('approvals: a wait times out, and a caller going away cancels it', async () => {
  const a = new Approvals();
  const t = waiting(a, call('acme', 0.05));
  assert.equal(await t.outcome, 'timeout');
  const ac = new AbortController();
  const c = waiting(a, call('acme'), ac.signal);
  await c.info;
  ac.abort();
  assert.equal(await c.outcome, 'cancelled');
  assert.deepEqual(await a.list(undefined), []);
});

test('approvals: a tenant holds a bounded number of waiting calls', async () => {
  const a = new Approvals();
  const ac = new AbortController();
  const all: Promise<unknown>[] = [];
  for (let i = 0; i < 256; i++) all.push(a.wait(call('acme'), () => {}, ac.signal));
  assert.throws(() => a.wait(call('acme'), () => {}), (e: unknown) => e instanceof ForkdError && e.code === 'RESOURCE_EXHAUSTED');
  const other = a.wait(call('beta'), () => {}, ac.signal);
  ac.abort();
  await Promise.all([...all, other]);
});

test('approvals through two control-plane replicas sharing a store: listed by either, decided through the other, once', async () => {
  const store = new SqliteControlStore(':memory:');
  const [a, b] = [new Approvals({ store }), new Approvals({ store })];
  const one = waiting(a, call('acme'));
  const two = waiting(a, call('acme'));
  const i1 = await one.info;
  const i2 = await two.info;
  assert.deepEqual((await b.list('acme')).map((x) => x.id).sort(), [i1.id, i2.id].sort(), 'the other replica lists them');
  assert.deepEqual(await b.list('beta'), []);
  await assert.rejects(b.decide(i1.id, true, 'beta'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  assert.equal((await b.decide(i1.id, true, 'acme')).id, i1.id);
  assert.equal(await one.outcome, 'approved', 'the replica the call waits on learned it');
  await assert.rejects(a.decide(i1.id, false, undefined), /not found/, 'decided once, whichever replica is asked');
  await a.decide(i2.id, false, undefined);
  assert.equal(await two.outcome, 'denied');
  assert.deepEqual(await b.list(undefined), [], 'done calls leave the store');
  const t = waiting(a, call('acme', 0.05));
  assert.equal(await t.outcome, 'timeout');
  await assert.rejects(b.decide((await t.info).id, true, undefined), /not found/, 'a timed-out call cannot be approved through the other');
  await store.close();
});
