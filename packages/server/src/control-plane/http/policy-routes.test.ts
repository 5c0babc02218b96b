import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fakeService, testApp } from './app-test-kit.js';

/* The policy and approval routes through the API over a fake node (whose spawn answers NOT_FOUND: reaching it means the gate let the call through). */

async function tenantWithSandbox() {
  const kit = await testApp(fakeService());
  const acme = (await kit.call('POST', '/v1/keys', JSON.stringify({ tenant: 'acme' }))).json.key as string;
  const beta = (await kit.call('POST', '/v1/keys', JSON.stringify({ tenant: 'beta' }))).json.key as string;
  const sb = (await kit.call('POST', '/v1/sandboxes', '{}', acme)).json.id as string;
  return { ...kit, acme, beta, sb };
}

test('policy routes: a tenant sets its sandbox policy, not its tenant policy; another tenant sees neither', async () => {
  const { call, acme, beta, sb } = await tenantWithSandbox();
  const doc = { exec: { deny: ['^rm -rf /$'] } };
  const put = await call('PUT', `/v1/sandboxes/${sb}/policy`, JSON.stringify(doc), acme);
  assert.equal(put.status, 200);
  assert.deepEqual(put.json, { scope: 'sandbox', id: sb, policy: doc });
  assert.deepEqual((await call('GET', `/v1/sandboxes/${sb}/policy`, undefined, acme)).json.policy, doc);
  assert.equal((await call('GET', `/v1/sandboxes/${sb}/policy`, undefined, beta)).json.error.code, 'NOT_FOUND');
  assert.equal((await call('PUT', '/v1/tenants/acme/policy', JSON.stringify(doc), acme)).json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call('PUT', '/v1/tenants/acme/policy', JSON.stringify(doc))).status, 200, 'admin keys set it');
  assert.deepEqual((await call('GET', '/v1/tenants/acme/policy', undefined, acme)).json.policy, doc, 'its keys read it');
  assert.equal((await call('GET', '/v1/tenants/acme/policy', undefined, beta)).json.error.code, 'PERMISSION_DENIED');
  assert.equal((await call('PUT', '/v1/templates/base/policy', '{}', acme)).json.error.code, 'PERMISSION_DENIED', 'shared templates: admin only');
  const bad = await call('PUT', `/v1/sandboxes/${sb}/policy`, JSON.stringify({ exec: { deny: ['(x)\\1'] } }), acme);
  assert.equal(bad.json.error.code, 'INVALID_ARGUMENT');
  assert.match(JSON.stringify(bad.json.error), /\(x\)/);
});

test('exec under policy: refused naming the rule (details too), gated calls wait and reach the node only when approved', async () => {
  const { app, call, acme, beta, sb, admin } = await tenantWithSandbox();
  await call('PUT', `/v1/sandboxes/${sb}/policy`, JSON.stringify({ exec: { deny: ['^rm '], requireApproval: ['^git push'] } }), acme);
  const denied = await call('POST', `/v1/sandboxes/${sb}/exec`, JSON.stringify({ command: 'rm x' }), acme);
  assert.equal(denied.status, 403);
  assert.equal(denied.json.error.code, 'PERMISSION_DENIED');
  assert.equal(denied.json.error.details.rule, 'sandbox:exec.deny[0] "^rm "');
  const exec = (key: string) => app.request(`/v1/sandboxes/${sb}/exec`, { method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ cmd: ['git', 'push'] }) });
  const res = await exec(acme);
  assert.equal(res.status, 200, 'answered at once with the waiting event');
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const first = JSON.parse(((await reader.read()).value ?? '').split('\n')[0]!);
  assert.equal(first.type, 'waiting');
  assert.equal(first.rule, 'sandbox:exec.requireApproval[0] "^git push"');
  assert.deepEqual((await call('GET', '/v1/approvals', undefined, beta)).json.approvals, [], 'another tenant sees nothing');
  assert.equal((await call('POST', `/v1/approvals/${first.approvalId}/approve`, undefined, beta)).json.error.code, 'NOT_FOUND');
  const listed = (await call('GET', '/v1/approvals', undefined, acme)).json.approvals;
  assert.deepEqual(listed.map((a: { id: string; command: string; tenant: string }) => [a.id, a.command, a.tenant]), [[first.approvalId, 'git push', 'acme']]);
  assert.equal((await call('GET', '/v1/approvals', undefined, admin)).json.approvals.length, 1, 'admin sees all');
  assert.equal((await call('POST', `/v1/approvals/${first.approvalId}/approve`, undefined, acme)).status, 200);
  let rest = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += value;
  }
  const last = JSON.parse(rest.trim().split('\n').at(-1)!);
  assert.equal(last.type, 'error');
  assert.equal(last.error.code, 'NOT_FOUND', 'approved: it reached the node (whose fake spawn answers NOT_FOUND)');
  const second = (await exec(acme)).body!.pipeThrough(new TextDecoderStream()).getReader();
  const w2 = JSON.parse(((await second.read()).value ?? '').split('\n')[0]!);
  assert.equal((await call('POST', `/v1/approvals/${w2.approvalId}/deny`, undefined, acme)).status, 200);
  let tail = '';
  for (;;) {
    const { value, done } = await second.read();
    if (done) break;
    tail += value;
  }
  const end = JSON.parse(tail.trim().split('\n').at(-1)!);
  assert.equal(end.error.code, 'PERMISSION_DENIED');
  assert.match(end.error.message, /denied by an approver: rule sandbox:exec\.requireApproval\[0\]/);
  const audit = (await call('GET', `/v1/audit?sandbox=${sb}&operation=policy.denied`, undefined, acme)).json.records;
  assert.equal(audit.length, 1);
});

test('precedence: a template policy (admin on a shared template, for the tenant) and a tenant policy apply to the sandbox; its own cannot lift them', async () => {
  const { call, acme, sb } = await tenantWithSandbox();
  // A shared template's policy is per tenant: the admin's own tenant's does not reach acme.
  assert.equal((await call('PUT', '/v1/templates/base/policy', JSON.stringify({ exec: { deny: ['^wget '] } }))).status, 200);
  assert.equal((await call('PUT', '/v1/templates/base/policy?tenant=acme', JSON.stringify({ exec: { deny: ['^curl '] } }))).status, 200);
  assert.notEqual((await call('POST', `/v1/sandboxes/${sb}/exec`, JSON.stringify({ cmd: ['wget', 'x'] }), acme)).json?.error?.code, 'PERMISSION_DENIED');
  await call('PUT', '/v1/tenants/acme/policy', JSON.stringify({ files: { hidden: ['/secret'] } }));
  await call('PUT', `/v1/sandboxes/${sb}/policy`, JSON.stringify({ exec: { allow: ['.*'] } }), acme);
  const r = await call('POST', `/v1/sandboxes/${sb}/exec`, JSON.stringify({ cmd: ['curl', 'x'] }), acme);
  assert.equal(r.json.error.details.rule, 'template:exec.deny[0] "^curl "');
  const f = await call('GET', `/v1/sandboxes/${sb}/files?path=/secret/../secret/k`, undefined, acme);
  assert.equal(f.json.error.details.rule, 'tenant:files.hidden[0] "/secret"');
  assert.deepEqual((await call('GET', '/v1/templates/base/policy', undefined, acme)).json.policy, { exec: { deny: ['^curl '] } }, 'readable by its tenant');
  assert.equal((await call('PUT', '/v1/templates/base/policy', '{}', acme)).json.error.code, 'PERMISSION_DENIED', 'set by admin keys only');
});
