import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { startJsonSink, type JsonSink } from '../testing/json-sink.js';
import { ForkdClient, ForkdError, type PolicyDocument, type Sandbox, type WaitingForApproval } from '@forkd/sdk';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { runCli, startDaemonProcess, stopDaemonProcess, type CliResult, type DaemonProcess } from '../testing/daemon-process.js';

let cliEnv: NodeJS.ProcessEnv = {};

function forkd(url: string, args: string[]): Promise<CliResult> {
  return runCli(url, cliEnv, args);
}

async function refused(p: Promise<unknown>, rule: RegExp): Promise<ForkdError> {
  const err = await p.then(
    () => assert.fail('expected PERMISSION_DENIED'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ForkdError, String(err));
  assert.equal(err.code, 'PERMISSION_DENIED', err.message);
  assert.match(err.message, rule);
  return err;
}

/** Resolves with the waiting event of an exec that is held for approval. */
function gated(sb: Sandbox, cmd: string): { waiting: Promise<WaitingForApproval>; result: ReturnType<Sandbox['exec']> } {
  let onWaiting!: (w: WaitingForApproval) => void;
  const waiting = new Promise<WaitingForApproval>((r) => (onWaiting = r));
  const result = sb.exec(cmd, { onWaiting });
  result.catch(() => {});
  return { waiting, result };
}

describe('per-call policy against a real daemon (SDK and CLI)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let hook: JsonSink | undefined;
  let client: ForkdClient;
  let sb: Sandbox;
  let policyFile = '';

  const setPolicy = async (doc: PolicyDocument) => {
    await writeFile(policyFile, JSON.stringify(doc));
    const r = await forkd(daemon!.url, ['policy', 'set', sb.id, '--file', policyFile]);
    assert.equal(r.code, 0, r.stderr);
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-policy-'));
    policyFile = join(dir, 'policy.json');
    hook = await startJsonSink();
    cfg = testConfig(dir);
    cliEnv = cfg.env;
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_APPROVAL_WEBHOOK: hook.url });
    client = new ForkdClient({ url: daemon.url, apiKey: daemon.apiKey });
    sb = await client.sandboxes.create({ memoryMb: 256 });
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    hook?.close();
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('policy set and get through the CLI; a bad pattern is refused naming it', async () => {
    const doc = { exec: { deny: ['^rm -rf /$'], requireApproval: ['^echo gated'] }, files: { readOnly: ['/etc'], hidden: ['/root/.ssh'] }, maxDurationSeconds: 600 };
    await setPolicy(doc);
    const got = await forkd(daemon!.url, ['policy', 'get', sb.id, '--json']);
    assert.equal(got.code, 0, got.stderr);
    assert.deepEqual(JSON.parse(got.stdout), doc);
    assert.deepEqual(await sb.getPolicy(), doc);
    const bad = await sb.setPolicy({ exec: { deny: ['(a)\\1'] } }).then(
      () => undefined,
      (e: unknown) => e as ForkdError,
    );
    assert.equal(bad?.code, 'INVALID_ARGUMENT');
    assert.match(JSON.stringify(bad?.details ?? bad?.message), /\(a\)/);
  });

  test('a denied command is refused with PERMISSION_DENIED naming the rule, argv or bash -lc alike, and audited', async () => {
    await refused(sb.exec(['rm', '-rf', '/']), /exec\.deny\[0\] "\^rm -rf \/\$"/);
    await refused(sb.exec('rm -rf /'), /exec\.deny\[0\]/);
    const cli = await forkd(daemon!.url, ['exec', sb.id, '--', 'rm', '-rf', '/']);
    assert.notEqual(cli.code, 0);
    assert.match(cli.stderr, /PERMISSION_DENIED/);
    assert.equal((await sb.exec('echo fine')).stdout, 'fine\n', 'other commands run');
    const audit = await client.audit.list({ sandbox: sb.id, operation: 'policy.deny' });
    assert.ok(audit.length >= 3, JSON.stringify(audit));
    assert.match(audit[0]!.target ?? '', /sandbox:exec\.deny\[0\] "\^rm -rf \/\$": rm -rf \//);
    assert.equal(audit[0]!.code, 'PERMISSION_DENIED');
    assert.ok((await client.audit.list({ sandbox: sb.id, operation: 'policy.allow' })).length >= 1, 'allowed calls are audited too');
  });

  test('an approval-gated command waits, is listed, calls the webhook, and runs only after forkd approve', async () => {
    const { waiting, result } = gated(sb, 'echo gated > /tmp/ran; echo done');
    const w = await waiting;
    assert.match(w.approvalId, /^apr-/);
    assert.match(w.rule, /requireApproval\[0\] "\^echo gated"/);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await sb.files.exists('/tmp/ran'), false, 'nothing ran before the approval');
    const list = await forkd(daemon!.url, ['approvals', '--json']);
    assert.equal(list.code, 0, list.stderr);
    const pending = JSON.parse(list.stdout) as { id: string; sandbox: string; command: string }[];
    const mine = pending.find((a) => a.id === w.approvalId);
    assert.ok(mine, list.stdout);
    assert.equal(mine.sandbox, sb.id);
    assert.match(mine.command, /echo gated/);
    const table = await forkd(daemon!.url, ['approvals']);
    assert.match(table.stdout, new RegExp(w.approvalId));
    assert.ok(hook!.received.some((h) => (h as { approval?: { id?: string } }).approval?.id === w.approvalId), `webhook got ${JSON.stringify(hook!.received)}`);
    const ok = await forkd(daemon!.url, ['approve', w.approvalId]);
    assert.equal(ok.code, 0, ok.stderr);
    const r = await result;
    assert.equal(r.stdout, 'done\n');
    assert.equal(await sb.files.readText('/tmp/ran'), 'gated\n');
    assert.equal((await client.approvals.list()).length, 0);
    assert.equal((await forkd(daemon!.url, ['approve', w.approvalId])).code !== 0, true, 'decided once');
    assert.ok((await client.audit.list({ sandbox: sb.id, operation: 'policy.approved' })).length >= 1);
  });

  test('forkd exec of a gated command says it waits, and runs once approved', async () => {
    const running = forkd(daemon!.url, ['exec', sb.id, '--', 'echo', 'gated', 'by', 'cli']);
    let pending: { id: string; command: string }[] = [];
    for (let i = 0; i < 200 && pending.length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
      pending = await client.approvals.list();
    }
    assert.equal(pending.length, 1);
    assert.equal(pending[0]!.command, 'echo gated by cli');
    await client.approvals.approve(pending[0]!.id);
    const r = await running;
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'gated by cli\n');
    assert.match(r.stderr, new RegExp(`waiting for approval ${pending[0]!.id}`));
  });

  test('a gated command is refused after forkd deny, and after the approval timeout', async () => {
    const d = gated(sb, 'echo gated > /tmp/denied');
    const w = await d.waiting;
    assert.equal((await forkd(daemon!.url, ['deny', w.approvalId])).code, 0);
    await refused(d.result, /denied by an approver.*requireApproval/);
    assert.equal(await sb.files.exists('/tmp/denied'), false);
    await setPolicy({ exec: { requireApproval: ['^echo gated'] }, approvalTimeoutSeconds: 1 });
    const t0 = Date.now();
    const t = gated(sb, 'echo gated > /tmp/late');
    await t.waiting;
    await refused(t.result, /no approver answered in time/);
    assert.ok(Date.now() - t0 >= 900);
    assert.equal(await sb.files.exists('/tmp/late'), false);
    assert.ok((await client.audit.list({ sandbox: sb.id, operation: 'policy.timeout' })).length >= 1);
    assert.ok((await client.audit.list({ sandbox: sb.id, operation: 'policy.denied' })).length >= 1);
  });

  test('hidden paths cannot be read, listed or statted; read-only ones not written; listings leave hidden ones out', async () => {
    await setPolicy({});
    await sb.exec('mkdir -p /root/.ssh && echo secret > /root/.ssh/id && echo x > /root/visible');
    await setPolicy({ files: { readOnly: ['/etc'], hidden: ['/root/.ssh'] } });
    await refused(sb.files.readText('/root/.ssh/id'), /files\.hidden\[0\] "\/root\/\.ssh"/);
    await refused(sb.files.readText('/tmp/../root/.ssh/id'), /files\.hidden/);
    await refused(sb.files.list('/root/.ssh'), /files\.hidden/);
    await refused(sb.files.stat('/root/.ssh'), /files\.hidden/);
    await refused(sb.files.write('/root/.ssh/authorized_keys', 'k'), /files\.hidden/);
    const names = (await sb.files.list('/root')).map((e) => e.name);
    assert.ok(names.includes('visible') && !names.includes('.ssh'), names.join(','));
    await refused(sb.files.write('/etc/evil', 'x'), /files\.readOnly\[0\] "\/etc"/);
    await refused(sb.files.remove('/etc/hostname'), /files\.readOnly/);
    await refused(sb.files.remove('/root', { recursive: true }), /files\.hidden/);
    assert.ok((await sb.files.readText('/etc/hostname')).length > 0, 'read-only is readable');
  });

  test('maxDurationSeconds kills; maxOutputBytes cuts and kills; both say so', async () => {
    await setPolicy({ maxDurationSeconds: 1, maxOutputBytes: 1000 });
    const limits: string[] = [];
    const t0 = Date.now();
    const slow = await sb.exec('sleep 30', { onLimit: (l) => limits.push(l.limit) });
    assert.equal(slow.signal, 9);
    assert.ok(Date.now() - t0 < 15_000);
    const loud = await sb.exec('yes aaaaaaaa | head -c 1000000; sleep 30', { onLimit: (l) => limits.push(l.limit) });
    assert.ok(loud.stdout.length <= 1000, `got ${loud.stdout.length} bytes`);
    assert.ok(loud.stdout.length > 0);
    assert.equal(loud.signal, 9);
    assert.deepEqual(limits, ['maxDurationSeconds', 'maxOutputBytes']);
  });

  test('network off: egress is cut for the duration of the call and restored after', async () => {
    await setPolicy({});
    await sb.setNetwork({ mode: 'egress' });
    await setPolicy({ network: 'off' });
    let during: Promise<string> | undefined;
    // An absent network is `none`.
    const mode = (s: Sandbox) => s.info.network?.mode ?? 'none';
    await sb.exec('sleep 2', {
      onStarted: () => {
        during = client.sandboxes.get(sb.id).then(mode);
      },
    });
    assert.equal(await during, 'none');
    assert.equal((await sb.refresh()).network?.mode, 'egress');
  });

  test('forks inherit the sandbox policy; a tenant policy applies under a sandbox one and cannot be lifted by it', async () => {
    await setPolicy({ exec: { allow: ['.*'] }, maxDurationSeconds: 100 });
    const [child] = await sb.fork();
    assert.deepEqual(await child!.getPolicy(), { exec: { allow: ['.*'] }, maxDurationSeconds: 100 });
    const tenant = (await client.keys.list()).find((k) => k.admin)!.tenant;
    await client.tenants.setPolicy(tenant, { exec: { deny: ['^forbidden'] } });
    try {
      await refused(sb.exec('forbidden thing'), /tenant:exec\.deny\[0\]/);
      await refused(child!.exec('forbidden thing'), /tenant:exec\.deny\[0\]/);
      const got = await forkd(daemon!.url, ['policy', 'get', tenant, '--tenant', '--json']);
      assert.deepEqual(JSON.parse(got.stdout), { exec: { deny: ['^forbidden'] } });
    } finally {
      await client.tenants.setPolicy(tenant, {});
      await child!.delete();
    }
  });
});
