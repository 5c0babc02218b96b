import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startJsonSink, type JsonSink } from '../testing/json-sink.js';
import { ForkdClient, ForkdError, type ApprovalInfo, type Sandbox, type WaitingForApproval } from '@forkd/sdk';
import { api } from '../testing/http-client.js';
import { runCli, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { startE2bDaemon, type E2bDaemon } from '../testing/e2b-daemon.js';
import { assertStillServing } from '../testing/still-serving.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';

/** The attacker's tenant: its policy allows only what each case sets; a neighbour of another tenant must keep working. */
const TENANT = 'mallory';
/** The tenant of the E2B key: the same attacks through envd's process.Start (envs, cwd, user). */
const E2B_TENANT = 'mallory-e2b';

async function refused(p: Promise<unknown>, rule: RegExp): Promise<ForkdError> {
  const err = await p.then(
    (v) => assert.fail(`expected PERMISSION_DENIED, got ${JSON.stringify(v)}`),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ForkdError, String(err));
  assert.equal(err.code, 'PERMISSION_DENIED', err.message);
  assert.match(err.message, rule);
  return err;
}

describe('per-call policy judges the whole call (real daemon, attacks of issue 23)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let e2b: E2bDaemon;
  let hook: JsonSink | undefined;
  let admin: ForkdClient;
  let mallory: ForkdClient;
  let sb: Sandbox;
  let neighbour: Sandbox;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-adv-policy-'));
    hook = await startJsonSink();
    cfg = testConfig(dir);
    e2b = await startE2bDaemon({ ...cfg.env, FORKD_WARM_POOL: '0', FORKD_APPROVAL_WEBHOOK: hook.url }, E2B_TENANT);
    daemon = e2b.daemon;
    admin = new ForkdClient({ url: daemon.url, apiKey: daemon.apiKey });
    mallory = new ForkdClient({ url: daemon.url, apiKey: (await api(daemon, 'POST', '/v1/keys', { tenant: TENANT })).json.key as string });
    neighbour = await admin.sandboxes.create({ memoryMb: 256 });
    sb = await mallory.sandboxes.create({ memoryMb: 256 });
  });
  afterEach(async () => {
    await admin.tenants.setPolicy(TENANT, {});
    await admin.tenants.setPolicy(E2B_TENANT, {});
    await assertStillServing(daemon, neighbour.id, daemon.child);
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    hook?.close();
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('allow ^ls$: ls with BASH_ENV=/dev/stdin and stdin `id` is refused naming BASH_ENV (REST and WebSocket); plain ls runs', async () => {
    await admin.tenants.setPolicy(TENANT, { exec: { allow: ['^ls$'] } });
    // Before the fix this printed uid=0(root) (refused() shows what ran).
    await refused(sb.exec('ls', { env: { BASH_ENV: '/dev/stdin' }, stdin: 'id' }), /exec\.allowEnv \("BASH_ENV" changes which code runs/);
    await refused(sb.stream({ cmd: ['bash', '-c', 'ls'], env: { BASH_ENV: '/dev/stdin' } }), /"BASH_ENV"/);
    await refused(sb.exec(['env', 'LD_PRELOAD=/tmp/x.so', 'ls']), /allow/);
    assert.equal((await sb.exec('ls')).exitCode, 0, 'the allowed command still runs');
    const audit = await admin.audit.list({ sandbox: sb.id, operation: 'policy.deny' });
    assert.ok(audit.some((a) => /env BASH_ENV=\/dev\/stdin/.test(a.target ?? '')), JSON.stringify(audit));
  });

  test('allow ^ls$: ls with PATH=/tmp after uploading /tmp/ls is refused naming PATH; a rule on the resolved path refuses the planted ls by any route', async () => {
    await sb.files.write('/tmp/ls', '#!/bin/sh\necho planted\n', { mode: 0o755 });
    await admin.tenants.setPolicy(TENANT, { exec: { allow: ['^ls$'] } });
    await refused(sb.exec(['ls'], { env: { PATH: '/tmp' } }), /exec\.allowEnv \("PATH"/);
    // With PATH allowed by name, an allow rule on the resolved program still tells /tmp/ls from /usr/bin/ls.
    await admin.tenants.setPolicy(TENANT, { exec: { allow: ['^/usr/bin/ls( |$)'], allowEnv: ['PATH'] } });
    await refused(sb.exec(['ls'], { env: { PATH: '/tmp:/usr/bin' } }), /tenant:exec\.allow/);
    await refused(sb.exec(['./ls'], { cwd: '/tmp' }), /tenant:exec\.allow/);
    await refused(sb.exec(['/tmp/ls']), /tenant:exec\.allow/);
    await refused(sb.exec(['/usr/bin/../../tmp/ls']), /tenant:exec\.allow/);
    const real = await sb.exec(['ls', '/tmp']);
    assert.equal(real.exitCode, 0);
    assert.match(real.stdout, /^ls$/m, 'the real ls ran (it lists /tmp/ls)');
    assert.doesNotMatch(real.stdout, /planted/);
    const approved = await admin.audit.list({ sandbox: sb.id, operation: 'policy.allow' });
    assert.ok(approved.some((a) => /program=\/usr\/bin\/ls/.test(a.target ?? '')), JSON.stringify(approved.slice(0, 3)));
  });

  test('a template build whose --run (or --start) the tenant policy denies is refused with PERMISSION_DENIED and builds nothing', async () => {
    await admin.tenants.setPolicy(TENANT, { exec: { allow: ['^ls$'] } });
    await refused(mallory.templates.build({ name: 'mallory-tpl', setup: ['id > /tmp/owned'] }), /tenant:exec\.allow/);
    await refused(mallory.templates.build({ name: 'mallory-tpl', setup: ['ls'], start: 'sleep 1000' }), /tenant:exec\.allow/);
    await admin.tenants.setPolicy(TENANT, { exec: { requireApproval: ['^id'] } });
    await refused(mallory.templates.build({ name: 'mallory-tpl', setup: ['id'] }), /does not wait for an approver/);
    assert.ok(!(await mallory.templates.list()).some((t) => t.name === 'mallory-tpl'), 'no template was built');
    assert.deepEqual((await mallory.sandboxes.list()).map((s) => s.id), [sb.id], 'no build sandbox was made');
    const audit = await admin.audit.list({ operation: 'policy.deny' });
    assert.ok(audit.some((a) => /template build mallory-tpl setup: id > \/tmp\/owned/.test(a.target ?? '')), JSON.stringify(audit.slice(0, 3)));
  });

  test('an approver is shown the env, cwd and user (waiting event, approvals list, forkd approvals, webhook, audit)', async () => {
    await admin.tenants.setPolicy(TENANT, { exec: { requireApproval: ['^echo '] } });
    let onWaiting!: (w: WaitingForApproval) => void;
    const waiting = new Promise<WaitingForApproval>((r) => (onWaiting = r));
    const result = sb.exec(['echo', 'hi'], { env: { DEPLOY_TARGET: 'prod', BASH_ENV: '/etc/evil' }, cwd: '/tmp', user: 'root', onWaiting });
    result.catch(() => {});
    const w = await waiting;
    const want = { env: { DEPLOY_TARGET: 'prod', BASH_ENV: '/etc/evil' }, cwd: '/tmp', user: 'root', program: '/usr/bin/echo' };
    assert.deepEqual(w.context, want);
    const listed = (await admin.approvals.list()).find((a) => a.id === w.approvalId);
    assert.deepEqual(listed?.context, want);
    const table = await runCli(daemon.url, cfg.env, ['approvals']);
    assert.match(table.stdout, /cwd=\/tmp user=root program=\/usr\/bin\/echo DEPLOY_TARGET="prod" BASH_ENV="\/etc\/evil"/);
    assert.deepEqual((hook!.received as { approval?: ApprovalInfo }[]).find((h) => h.approval?.id === w.approvalId)?.approval?.context, want);
    await admin.approvals.deny(w.approvalId);
    await refused(result, /denied by an approver/);
    const audit = await admin.audit.list({ sandbox: sb.id, operation: 'policy.wait' });
    assert.match(audit[0]?.target ?? '', /echo hi \[cwd=\/tmp, user=root, program=\/usr\/bin\/echo, env DEPLOY_TARGET=prod, env BASH_ENV=\/etc\/evil\]/);
  });

  test('E2B envd: process.Start with envs (the call\'s or the sandbox\'s) is judged like any exec', async () => {
    const { Sandbox } = await import('e2b');
    const opts = { apiKey: e2b.key, apiUrl: e2b.apiUrl, sandboxUrl: e2b.envdUrl, timeoutMs: 120_000 };
    const plain = await Sandbox.create('base', opts);
    const tainted = await Sandbox.create('base', { ...opts, envs: { BASH_ENV: '/tmp/x' } });
    try {
      await admin.tenants.setPolicy(E2B_TENANT, { exec: { allow: ['^ls$'] } });
      await assert.rejects(plain.commands.run('ls', { envs: { BASH_ENV: '/dev/stdin' } }), /BASH_ENV/);
      await assert.rejects(plain.commands.run('ls', { envs: { 'BASH_FUNC_ls%%': '() { id; }' } }), /BASH_FUNC_ls%%/);
      await assert.rejects(tainted.commands.run('ls'), /BASH_ENV/, "the sandbox's own env is judged too");
      assert.equal((await plain.commands.run('ls')).exitCode, 0);
    } finally {
      await plain.kill().catch(() => {});
      await tainted.kill().catch(() => {});
    }
  });
});
