import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec, setResidentExec, spawnHelperDaemon, type ExecOptions } from './exec.js';
import { SPAWN_TOOL, ResidentSpawner } from './resident-spawner.js';

const built = existsSync(SPAWN_TOOL);

describe('resident spawner: exec() through forkd-spawn does what Node spawn does', { skip: !built && 'forkd-spawn not built (npm run build)' }, () => {
  const spawner = new ResidentSpawner();
  setResidentExec(spawner);
  after(() => {
    setResidentExec(undefined);
    spawner.close();
  });

  test('output, exit codes, PATH from the given env, cwd, umask, stdin, and the pid before it ends', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'forkd-spawn-'));
    try {
      let pid = 0;
      const r = await exec('sh', ['-c', 'echo out; echo err >&2; pwd; cat; umask > u; exit 3'], { cwd: dir, input: 'in\n', umask: 0o027, allowFailure: true, onSpawn: (p) => (pid = p) });
      assert.deepEqual(r, { code: 3, stdout: `out\n${dir}\nin\n`, stderr: 'err\n' });
      assert.ok(pid > 0 && pid !== spawner.pid);
      assert.equal((await readFile(join(dir, 'u'), 'utf8')).trim(), '0027');
      assert.equal((await exec('sh', ['-c', 'echo $ONLY'], { env: { PATH: '/usr/bin:/bin', ONLY: 'this' } })).stdout, 'this\n');
      // Bytes as they are, not a line at a time; a large output whole.
      const big = await exec('head', ['-c', String(5 * 2 ** 20), '/dev/zero']);
      assert.equal(big.stdout.length, 5 * 2 ** 20);
      assert.equal((await exec('printf', ['a\\0b'])).stdout, 'a\0b');
      assert.ok((await stat(SPAWN_TOOL)).isFile());
      // The tool starts as from Node: no signal blocked or ignored (the spawner blocks SIGCHLD and ignores SIGPIPE).
      const status = (await exec('cat', ['/proc/self/status'])).stdout;
      assert.match(status, /^SigBlk:\s+0+$/m);
      assert.match(status, /^SigIgn:\s+0+$/m);
      // Many in a row, each in its own memory once it runs: the spawner's own state is intact after them.
      const many = await Promise.all(Array.from({ length: 40 }, (_, i) => exec('sh', ['-c', `echo ${i}`], { cwd: dir })));
      assert.deepEqual(many.map((x) => x.stdout), Array.from({ length: 40 }, (_, i) => `${i}\n`));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('failures as exec() reports them: the exit with the stderr tail, a missing tool, a timeout', async () => {
    await assert.rejects(exec('sh', ['-c', 'echo why >&2; exit 2']), (err: { code?: string; message?: string; details?: Record<string, unknown> }) => err.code === 'INTERNAL' && /failed \(exit 2\): why/.test(err.message ?? '') && err.details?.stderrTail === 'why\n');
    await assert.rejects(exec('forkd-no-such-tool', []), (err: { code?: string; message?: string }) => err.code === 'INTERNAL' && /cannot run forkd-no-such-tool: spawn forkd-no-such-tool ENOENT/.test(err.message ?? ''));
    await assert.rejects(exec('/proc/self/status', []), /cannot run \/proc\/self\/status: spawn \/proc\/self\/status EACCES/);
    await assert.rejects(exec('sh', [], { cwd: '/nonexistent' }), /ENOENT/);
    const t0 = performance.now();
    await assert.rejects(exec('sleep', ['30'], { timeoutMs: 200 }), { code: 'TIMEOUT' });
    assert.ok(performance.now() - t0 < 5000);
    // A signal's end reads as Node reports it.
    assert.equal((await exec('sh', ['-c', 'kill -9 $$'], { allowFailure: true })).code, 137);
  });

  test('stdio: the default\'s own spelling and all-ignored (runc starting a detached container) go through it; others Node spawns', async (t) => {
    const parent = async (stdio: ExecOptions['stdio']) => {
      const dir = await mkdtemp(join(tmpdir(), 'forkd-spawn-'));
      try {
        const r = await exec('sh', ['-c', 'echo $PPID > ppid; echo out; echo err >&2'], { cwd: dir, stdio });
        return { ppid: Number(await readFile(join(dir, 'ppid'), 'utf8')), stdout: r.stdout, stderr: r.stderr };
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    };
    assert.equal((await exec('true', [])).code, 0);
    assert.deepEqual(await parent(['ignore', 'pipe', 'pipe']), { ppid: spawner.pid, stdout: 'out\n', stderr: 'err\n' });
    assert.deepEqual(await parent(['ignore', 'ignore', 'ignore']), { ppid: spawner.pid, stdout: '', stderr: '' });
    assert.deepEqual(await parent(['pipe', 'pipe', 'pipe']), { ppid: process.pid, stdout: 'out\n', stderr: 'err\n' });
    // A tool (a container's init, through runc) gets the fds Node's spawn would give it (stdio, and what the
    // daemon itself was given open across exec): no pipe, channel or signalfd of the spawner's.
    const dir = await mkdtemp(join(tmpdir(), 'forkd-spawn-'));
    t.after(() => rm(dir, { recursive: true, force: true }));
    const fds = async (stdio?: ExecOptions['stdio']) => {
      await exec('sh', ['-c', 'ls /proc/$$/fd > fds'], { cwd: dir, stdio });
      return (await readFile(join(dir, 'fds'), 'utf8')).split('\n').filter((f) => f !== '');
    };
    const viaNode = await fds(['pipe', 'pipe', 'pipe']);
    assert.ok(viaNode.includes('2'), viaNode.join(' '));
    assert.deepEqual(await fds(), viaNode);
    assert.deepEqual(await fds(['ignore', 'ignore', 'ignore']), viaNode);
    // Quiet: done at its exit, though what it left behind holds the stdio it was given (a container's init).
    const t0 = performance.now();
    const r = await exec('sh', ['-c', 'sleep 3 & echo started'], { stdio: ['ignore', 'ignore', 'ignore'] });
    assert.deepEqual(r, { code: 0, stdout: '', stderr: '' });
    assert.ok(performance.now() - t0 < 2000, `${Math.round(performance.now() - t0)} ms`);
  });

  test('a helper daemon: through it, in a session of its own, its pid while it runs, its end reported', async () => {
    const d = spawnHelperDaemon('sleep', ['30']);
    const pid = await d.pid;
    assert.ok(pid > 0);
    // /proc/PID/stat after the command's ")": state ppid pgrp session
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const [, ppid, pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    assert.deepEqual([Number(ppid), Number(pgrp), Number(session)], [spawner.pid, pid, pid]);
    let ended = false;
    void d.exited.then(() => (ended = true));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(ended, false);
    process.kill(pid, 'SIGKILL');
    assert.equal(await d.exited, 'failed');
    const missing = spawnHelperDaemon('forkd-no-such-tool', []);
    assert.equal(await missing.exited, 'failed');
    assert.equal(await missing.pid, 0, 'could not be started');
    assert.equal(await spawnHelperDaemon('true', []).exited, 'clean');
  });

  test('a helper dies with the daemon until let go; one let go outlives it', async () => {
    // A daemon of its own (this test's process must live on): it starts two helpers, lets one go, and is killed.
    const script = `
      import { spawnHelperDaemon } from ${JSON.stringify(new URL('./exec.js', import.meta.url).href)};
      import { useResidentSpawner } from ${JSON.stringify(new URL('./resident-spawner.js', import.meta.url).href)};
      useResidentSpawner(true);
      const held = spawnHelperDaemon('sleep', ['30']);
      const gone = spawnHelperDaemon('sleep', ['31']);
      gone.release();
      console.log(JSON.stringify([await held.pid, await gone.pid]));
      setTimeout(() => process.kill(process.pid, 'SIGKILL'), 100);
    `;
    const out = await exec(process.execPath, ['--input-type=module', '-e', script], { allowFailure: true });
    const [held, gone] = JSON.parse(out.stdout) as [number, number];
    assert.ok(held > 0 && gone > 0, out.stdout);
    const alive = (pid: number) => readFile(`/proc/${pid}/stat`, 'utf8').then((s) => s.slice(s.lastIndexOf(')') + 2, s.lastIndexOf(')') + 3) !== 'Z', () => false);
    for (let i = 0; i < 100 && (await alive(held)); i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(await alive(held), false, 'the held helper went with its daemon');
    assert.equal(await alive(gone), true, 'the one let go lives on');
    process.kill(gone, 'SIGKILL');
  });

  test('more at once than its table holds: the rest are spawned by Node, every one answered', async () => {
    const rs = await Promise.all(Array.from({ length: 300 }, (_, i) => exec('sh', ['-c', `sleep 0.2; echo ${i}`])));
    assert.deepEqual(rs.map((r) => r.stdout), Array.from({ length: 300 }, (_, i) => `${i}\n`));
  });

  test('a helper that dies: what it was given fails (never run twice); the next exec starts a new one', async () => {
    assert.equal((await exec('true', [])).code, 0);
    const first = spawner.pid;
    const running = exec('sleep', ['30']);
    await new Promise((r) => setTimeout(r, 100));
    process.kill(first, 'SIGKILL');
    await assert.rejects(running, /forkd-spawn ended while it ran/);
    assert.equal((await exec('echo', ['again'])).stdout, 'again\n');
    assert.ok(spawner.pid > 0 && spawner.pid !== first);
  });
});
