import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { CLI, NODE_FLAGS, runCli, startDaemonProcess, stopDaemonProcess, type CliResult, type DaemonProcess } from '../testing/daemon-process.js';

/** The test daemon's env (its state dir): the CLI finds the machine's admin key there, as on a real host. */
let cliEnv: NodeJS.ProcessEnv = {};

/** Runs the real `forkd` CLI binary against the test daemon (stdin: `input`, else empty). */
function forkd(url: string, args: string[], input?: string | Buffer | 'devnull', env: NodeJS.ProcessEnv = {}): Promise<CliResult> {
  return runCli(url, { ...cliEnv, ...env }, args, input ?? '');
}

describe('CLI against a real daemon', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let id = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-cli-'));
    cfg = testConfig(dir);
    cliEnv = cfg.env;
    daemon = await startDaemonProcess(cfg.env);
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('create --json prints the id; ls lists it', async () => {
    const r = await forkd(daemon!.url, ['create', '--memory', '256', '--json']);
    assert.equal(r.code, 0, r.stderr);
    id = JSON.parse(r.stdout).id;
    assert.match(id, /^sbx-[a-z0-9]{12}$/);
    const plain = await forkd(daemon!.url, ['create']);
    assert.equal(plain.code, 0, plain.stderr);
    const other = plain.stdout.trim();
    assert.match(other, /^sbx-[a-z0-9]{12}$/);
    const ls = await forkd(daemon!.url, ['ls', '--json']);
    const listed = JSON.parse(ls.stdout);
    const ids = (Array.isArray(listed) ? listed : listed.sandboxes).map((s: { id: string }) => s.id);
    assert.ok(ids.includes(id) && ids.includes(other));
    assert.equal((await forkd(daemon!.url, ['rm', other])).code, 0);
  });

  test('exec passes stdout, stderr and the exit code through', async () => {
    const hi = await forkd(daemon!.url, ['exec', id, '--', 'echo', 'hi']);
    assert.equal(hi.stdout, 'hi\n');
    assert.equal(hi.code, 0);
    const fail = await forkd(daemon!.url, ['exec', id, '--', 'bash', '-lc', 'echo err >&2; exit 5']);
    assert.equal(fail.code, 5);
    assert.equal(fail.stderr, 'err\n');
    const env = await forkd(daemon!.url, ['exec', '--env', 'A=1', '--cwd', '/tmp', id, '--', 'bash', '-c', 'echo $A $(pwd)']);
    assert.equal(env.stdout, '1 /tmp\n');
  });

  test('piped stdin reaches the process', async () => {
    const input = randomBytes(200_000).toString('base64');
    const r = await forkd(daemon!.url, ['exec', id, '--', 'sha256sum'], input);
    assert.equal(r.stdout.split(' ')[0], createHash('sha256').update(input).digest('hex'));
  });

  test('stdin at EOF at once (/dev/null) never loses the exit', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await forkd(daemon!.url, ['exec', id, '--', 'echo', String(i)], 'devnull');
      assert.equal(r.stdout, `${i}\n`, r.stderr);
      assert.equal(r.code, 0);
    }
  });

  test('with stdin /dev/null (one HTTP request, no WebSocket): stdout and stderr apart, the exit code, a signal to forkd reaches the process', async () => {
    const r = await forkd(daemon!.url, ['exec', id, '--', 'bash', '-c', 'echo out; echo err >&2; exit 4'], 'devnull');
    assert.deepEqual([r.stdout, r.stderr, r.code], ['out\n', 'err\n', 4]);
    for (const [signal, status] of [['SIGINT', 7], ['SIGTERM', 8]] as const) {
      const script = `trap 'echo got ${signal}; exit ${status}' ${signal.slice(3)}; echo ready; sleep 30 & wait`;
      const child = spawn(process.execPath, [...NODE_FLAGS, CLI, 'exec', id, '--', 'bash', '-c', script], { env: { ...process.env, ...cliEnv, FORKD_API_KEY: '', FORKD_URL: daemon!.url }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      const ready = new Promise<void>((resolve) => child.stdout!.on('data', (d: Buffer) => ((out += d.toString()), out.includes('ready') && resolve())));
      const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
      await ready;
      child.kill(signal);
      assert.equal(await exited, status, out);
      assert.equal(out, `ready\ngot ${signal}\n`);
    }
  });

  test('--background returns the pid at once and the process keeps running', async () => {
    const r = await forkd(daemon!.url, ['exec', '--background', '--tag', 'bg', '--json', id, '--', 'sleep', '300']);
    assert.equal(r.code, 0, r.stderr);
    const pid = JSON.parse(r.stdout).pid;
    assert.ok(pid > 1);
    const ps = await forkd(daemon!.url, ['ps', id]);
    assert.match(ps.stdout, /sleep 300/);
    assert.equal((await forkd(daemon!.url, ['kill', id, 'tag:bg'])).code, 0);
  });

  test('cp uploads and downloads 100 MB byte-identical', async () => {
    const local = join(dir, 'up.bin');
    const data = randomBytes(100 * 1024 * 1024);
    await writeFile(local, data);
    const up = await forkd(daemon!.url, ['cp', local, `${id}:/tmp/up.bin`]);
    assert.equal(up.code, 0, up.stderr);
    const back = join(dir, 'down.bin');
    const down = await forkd(daemon!.url, ['cp', `${id}:/tmp/up.bin`, back]);
    assert.equal(down.code, 0, down.stderr);
    assert.ok((await readFile(back)).equals(data));
    await rm(local);
    await rm(back);
  });

  test('shell runs an interactive PTY', async () => {
    // `script` gives the CLI a real terminal on its stdin/stdout.
    const cmd = `${process.execPath} ${NODE_FLAGS.join(' ')} ${CLI} shell ${id}`;
    const r = await new Promise<CliResult>((resolve) => {
      const child = spawn('script', ['-qec', cmd, '/dev/null'], { env: { ...process.env, ...cliEnv, FORKD_URL: daemon!.url, TERM: 'xterm' }, stdio: ['pipe', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      child.on('close', (code) => resolve({ code: code ?? -1, stdout: out, stderr: '' }));
      setTimeout(() => child.stdin.write('echo $((6*7))\n'), 1500);
      setTimeout(() => child.stdin.write('exit 3\n'), 3000);
    });
    assert.match(r.stdout, /[\r\n]42\r*\n/);
    assert.equal(r.code, 3);
  });

  test('snapshot, timeline, fork, rewind, pause, resume and tree', async () => {
    const url = daemon!.url;
    assert.equal((await forkd(url, ['exec', id, '--', 'bash', '-c', 'echo one > /tmp/state'])).code, 0);
    const snap = await forkd(url, ['snapshot', id, '--name', 'first', '--json']);
    assert.equal(snap.code, 0, snap.stderr);
    const snapId = JSON.parse(snap.stdout).id;
    assert.match(snapId, /^snap-/);
    assert.equal((await forkd(url, ['exec', id, '--', 'bash', '-c', 'echo two > /tmp/state'])).code, 0);
    const tl = JSON.parse((await forkd(url, ['timeline', id, '--json'])).stdout);
    assert.equal(tl[0].id, snapId);
    assert.equal(tl[0].pinned, true);
    const human = await forkd(url, ['timeline', id]);
    assert.match(human.stdout, /first/);

    const fork = await forkd(url, ['fork', snapId, '--count', '2', '--json']);
    assert.equal(fork.code, 0, fork.stderr);
    const { ids } = JSON.parse(fork.stdout);
    assert.equal(ids.length, 2);
    for (const f of ids) assert.equal((await forkd(url, ['exec', f, '--', 'cat', '/tmp/state'])).stdout, 'one\n');
    const live = JSON.parse((await forkd(url, ['fork', id, '--json'])).stdout).ids;
    assert.equal((await forkd(url, ['exec', live[0], '--', 'cat', '/tmp/state'])).stdout, 'two\n');

    assert.equal((await forkd(url, ['rewind', id, snapId])).code, 0);
    assert.equal((await forkd(url, ['exec', id, '--', 'cat', '/tmp/state'])).stdout, 'one\n');
    assert.equal((await forkd(url, ['pause', id])).code, 0);
    const paused = JSON.parse((await forkd(url, ['ls', '--json'])).stdout);
    assert.equal((Array.isArray(paused) ? paused : paused.sandboxes).find((s: { id: string }) => s.id === id).state, 'paused');
    assert.equal((await forkd(url, ['resume', id])).code, 0);
    assert.equal((await forkd(url, ['exec', id, '--', 'cat', '/tmp/state'])).stdout, 'one\n');
    // Files only: the pause keeps no memory, the resume starts it cold on the same files.
    assert.equal((await forkd(url, ['exec', id, '--background', '--', 'sleep', '3600'])).code, 0);
    const fsPaused = await forkd(url, ['pause', '--no-memory', id, '--json']);
    assert.equal(fsPaused.code, 0, fsPaused.stderr);
    assert.deepEqual([JSON.parse(fsPaused.stdout).state, JSON.parse(fsPaused.stdout).pausedMemory], ['paused', false]);
    assert.equal((await forkd(url, ['resume', id])).code, 0);
    assert.equal((await forkd(url, ['exec', id, '--', 'bash', '-c', 'cat /tmp/state; cat /proc/[0-9]*/comm 2>/dev/null | grep -cx sleep || true'])).stdout, 'one\n0\n');
    const own = JSON.parse((await forkd(url, ['fork', snapId, '--metadata', 'who=cli-fork', '-e', 'CLI_FORK=yes', '--json'])).stdout).ids;
    assert.equal((await forkd(url, ['exec', own[0], '--', 'bash', '-c', 'echo $CLI_FORK'])).stdout, 'yes\n');
    const mine = JSON.parse((await forkd(url, ['ls', '--metadata', 'who=cli-fork', '--json'])).stdout);
    assert.deepEqual((Array.isArray(mine) ? mine : mine.sandboxes).map((s: { id: string }) => s.id), own);
    assert.equal((await forkd(url, ['rm', own[0]])).code, 0);

    const tree = JSON.parse((await forkd(url, ['tree', id, '--json'])).stdout);
    assert.equal(tree.sandbox.id, id);
    assert.deepEqual(tree.children.map((c: { sandbox: { id: string } }) => c.sandbox.id).sort(), [...ids, ...live].sort());
    const drawn = await forkd(url, ['tree', id]);
    for (const f of ids) assert.ok(drawn.stdout.includes(f));
    for (const f of [...ids, ...live]) assert.equal((await forkd(url, ['rm', f])).code, 0);
  });

  test('template build, ls and rm', async () => {
    const url = daemon!.url;
    const b = await forkd(url, ['template', 'build', 'cli-tpl', '--run', 'echo from-template > /etc/motd-forkd', '--json']);
    assert.equal(b.code, 0, b.stderr);
    assert.equal(JSON.parse(b.stdout).name, 'cli-tpl');
    const ls = JSON.parse((await forkd(url, ['template', 'ls', '--json'])).stdout);
    assert.ok(ls.some((t: { name: string }) => t.name === 'cli-tpl'));
    const sb = (await forkd(url, ['create', '--template', 'cli-tpl'])).stdout.trim();
    assert.equal((await forkd(url, ['exec', sb, '--', 'cat', '/etc/motd-forkd'])).stdout, 'from-template\n');
    assert.equal((await forkd(url, ['rm', sb])).code, 0);
    const rm = await forkd(url, ['template', 'rm', 'cli-tpl']);
    assert.equal(rm.code, 0, rm.stderr);
    const bad = await forkd(url, ['template', 'build', 'bad-tpl', '--run', 'exit 9']);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /FAILED_PRECONDITION/);
  });

  test('keys: another tenant\'s key sees none of our sandboxes; the audit log shows who did what', async () => {
    const url = daemon!.url;
    const ours = JSON.parse((await forkd(url, ['create', '--json'])).stdout).id as string;
    const k = await forkd(url, ['keys', 'create', '--tenant', 'other', '--format', 'e2b', '--name', 'ci', '--json']);
    assert.equal(k.code, 0, k.stderr);
    const { key, info } = JSON.parse(k.stdout);
    assert.match(key, /^e2b_[0-9a-f]{40}$/);
    const other = { FORKD_API_KEY: key };
    assert.ok(!JSON.parse((await forkd(url, ['ls', '--json'], undefined, other)).stdout).some((s: { id: string }) => s.id === ours));
    const denied = await forkd(url, ['exec', ours, '--', 'true'], undefined, other);
    assert.notEqual(denied.code, 0);
    assert.match(denied.stderr, /NOT_FOUND/);
    const theirs = JSON.parse((await forkd(url, ['create', '--json'], undefined, other)).stdout).id as string;
    assert.ok(!JSON.parse((await forkd(url, ['ls', '--json'])).stdout).some((s: { id: string }) => s.id === theirs), 'tenants are isolated both ways');
    assert.equal((await forkd(url, ['keys', 'create'], undefined, other)).code, 1, 'only admin keys mint keys');
    const keys = JSON.parse((await forkd(url, ['keys', 'list', '--json'])).stdout);
    assert.ok(keys.some((x: { id: string; tenant: string }) => x.id === info.id && x.tenant === 'other'));
    assert.match((await forkd(url, ['keys', 'list'])).stdout, /TENANT/);
    const trail = JSON.parse((await forkd(url, ['audit', '--json', '--sandbox', ours])).stdout);
    assert.ok(trail.some((r: { tenant: string; code: string }) => r.tenant === 'other' && r.code === 'NOT_FOUND'), 'the refused call is on record');
    const theirTrail = JSON.parse((await forkd(url, ['audit', '--json'], undefined, other)).stdout);
    assert.ok(theirTrail.length > 0 && theirTrail.every((r: { tenant: string }) => r.tenant === 'other'));
    assert.match((await forkd(url, ['audit', '--limit', '5'])).stdout, /OPERATION/);
    assert.equal((await forkd(url, ['rm', theirs], undefined, other)).code, 0);
    assert.equal((await forkd(url, ['keys', 'revoke', info.id])).code, 0);
    assert.match((await forkd(url, ['ls'], undefined, other)).stderr, /UNAUTHENTICATED/);
    assert.equal((await forkd(url, ['rm', ours])).code, 0);
  });

  test('logs, pin, timeout, metrics, ls filters', async () => {
    const url = daemon!.url;
    const sb = JSON.parse((await forkd(url, ['create', '--json', '--metadata', 'team=cli', '--timeout', '3600'])).stdout).id as string;
    assert.equal((await forkd(url, ['exec', sb, '--', 'echo', 'hi'])).stdout, 'hi\n');
    const snap = JSON.parse((await forkd(url, ['snapshot', sb, '--json'])).stdout).id as string;
    assert.match((await forkd(url, ['pin', snap])).stdout, /pinned/);
    assert.equal(JSON.parse((await forkd(url, ['timeline', sb, '--json'])).stdout)[0].pinned, true);
    assert.match((await forkd(url, ['pin', snap, '--off'])).stdout, /unpinned/);
    const logs = (await forkd(url, ['logs', sb])).stdout;
    assert.match(logs, /POST \/v1\/sandboxes -> OK/);
    assert.match(logs, / echo hi -> OK/);
    assert.match(logs, /POST \/v1\/snapshots\/:snap\/pin snap-\w+ -> OK/);
    assert.match(logs, /POST \/v1\/sandboxes\/:id\/snapshots -> OK/);
    assert.deepEqual(JSON.parse((await forkd(url, ['ls', '--metadata', 'team=cli', '--json'])).stdout).map((s: { id: string }) => s.id), [sb]);
    assert.match((await forkd(url, ['timeout', sb, '60'])).stdout, /T.*Z \(pause\)/);
    assert.equal((await forkd(url, ['timeout', sb, '0'])).stdout, 'no lifetime\n');
    assert.match((await forkd(url, ['metrics', sb])).stdout, /disk /);
    assert.equal((await forkd(url, ['rm', sb])).code, 0);
  });

  test('errors are clear and carry a stable code', async () => {
    const r = await forkd(daemon!.url, ['exec', 'sbx-000000000000', '--', 'true']);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /NOT_FOUND/);
    const bad = await forkd(daemon!.url, ['create', '--memory', 'lots']);
    assert.notEqual(bad.code, 0);
    assert.equal((await forkd(daemon!.url, ['rm', id])).code, 0);
  });
});
