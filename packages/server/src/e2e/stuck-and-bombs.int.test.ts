import { readdir, readFile, mkdtemp, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { createTestNode, disposeNodeDir, isRoot, orphans, testConfig, type TestNode } from '../testing/test-node.js';
import { run, waitFor } from '../testing/helpers.js';
import { api, execHttp } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { cgroupDirs } from '../node/cgroups/cgroups.js';
import { readHostLimits, sandboxRlimits } from '../node/runtime/rlimits.js';

/** Short, so a test waits seconds for a deadline; the daemon's default is 30 s. */
const DEADLINE_S = 2;
const DEADLINE_MS = DEADLINE_S * 1000;

/** Host pid of a sandbox's PID 1 (the guest agent), found in its cgroup: the task that is 1 in its own pid namespace. */
async function initPid(cgroupParent: string, id: string): Promise<number> {
  const procs = await readFile(join(cgroupDirs(`${cgroupParent}/${id}`).pids, 'cgroup.procs'), 'utf8');
  for (const pid of procs.split('\n').filter(Boolean).map(Number)) {
    const status = await readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    if (/^NSpid:.*\s1$/m.test(status)) return pid;
  }
  throw new Error(`no init found for ${id}`);
}

/** Whether a process is stopped (job control), as SIGSTOP leaves it. */
async function stopped(pid: number): Promise<boolean> {
  return /^State:\s+T/m.test(await readFile(`/proc/${pid}/status`, 'utf8'));
}

async function timed<T>(p: Promise<T>): Promise<{ ms: number; value?: T; error?: unknown }> {
  const t0 = Date.now();
  try {
    const value = await p;
    return { ms: Date.now() - t0, value };
  } catch (error) {
    return { ms: Date.now() - t0, error };
  }
}

function assertTimeout(r: { ms: number; error?: unknown }, what: string): void {
  assert.ok(r.error instanceof ForkdError, `${what}: failed with a ForkdError (${String(r.error)})`);
  assert.equal((r.error as ForkdError).code, 'TIMEOUT', `${what}: ${String(r.error)}`);
  assert.ok(r.ms >= DEADLINE_MS - 100 && r.ms < DEADLINE_MS + 2000, `${what}: failed at its deadline (${r.ms} ms)`);
}

/** Every regular file named core or core.* under `dir` (a sandbox root seen from the host). */
async function coreFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const sub of ['', 'tmp', 'root']) {
    for (const name of await readdir(join(dir, sub)).catch(() => [] as string[])) {
      if (/^core(\.\d+)?$/.test(name) && (await stat(join(dir, sub, name))).isFile()) out.push(join(sub, name));
    }
  }
  return out;
}

describe('a guest agent that never answers, and resource bombs (real sandboxes)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let neighbour = '';
  const previous = process.env.FORKD_GUEST_DEADLINE_S;

  before(async () => {
    process.env.FORKD_GUEST_DEADLINE_S = String(DEADLINE_S);
    node = await createTestNode({ verbose: !!process.env.STUCK_VERBOSE });
    neighbour = (await node.manager.create({ template: 'base', memoryMb: 256, pids: 128 })).id;
  });
  after(async () => {
    if (previous === undefined) delete process.env.FORKD_GUEST_DEADLINE_S;
    else process.env.FORKD_GUEST_DEADLINE_S = previous;
    await node?.dispose();
  });

  const neighbourWorks = async () => assert.equal((await run(node.manager, neighbour, ['echo', 'neighbour'])).stdout, 'neighbour\n');

  test('an agent that accepts and never answers: calls fail with TIMEOUT at the deadline, its lock is let go, nothing else waits', async () => {
    const id = (await node.manager.create({ template: 'base', memoryMb: 256 })).id;
    assert.equal((await run(node.manager, id, ['echo', 'up'])).stdout, 'up\n');
    await node.manager.snapshot(id);
    const pid = await initPid(node.env.FORKD_CGROUP_PARENT!, id);
    // A stopped process's listening socket still accepts (the kernel completes the connect into its backlog);
    // nothing reads it: the HELLO and the request go unanswered.
    process.kill(pid, 'SIGSTOP');
    await waitFor(() => stopped(pid), 5000, 'the agent to stop');

    const stuckCall = timed(node.manager.guestClient(id).then((g) => g.info()));
    const neighbourCall = timed(neighbourWorks());
    const [s, n] = await Promise.all([stuckCall, neighbourCall]);
    assertTimeout(s, 'info on the stuck agent');
    assert.equal(n.error, undefined, String(n.error));
    assert.ok(n.ms < DEADLINE_MS, `the neighbour answered without waiting for it (${n.ms} ms)`);
    assertTimeout(await timed(run(node.manager, id, ['echo', 'never'])), 'exec on the stuck agent');
    assertTimeout(await timed(node.manager.guestClient(id).then((g) => g.listDir('/'))), 'a listing on the stuck agent');

    // A reconciler pass with a snapshot due for both: the neighbour's is taken, the pass is not held by the stuck one.
    node.manager.markActive(id);
    node.manager.markActive(neighbour);
    const before = (await node.manager.snapshotRecords(neighbour)).length;
    const tick = await timed(node.tick(Date.now() + 6 * 60_000));
    assert.equal(tick.error, undefined, String(tick.error));
    assert.ok(tick.ms < 4 * DEADLINE_MS + 5000, `the pass ended within the per-sandbox timeout (${tick.ms} ms)`);
    assert.equal((await node.manager.snapshotRecords(neighbour)).length, before + 1, 'the neighbour got its policy snapshot');

    // A lifecycle operation holding the lock while it waits on the agent (the dumpable switch before the dump)
    // ends by its deadline (guest: 2 s) with TIMEOUT; a delete queued behind it then runs. Ahead of both in the
    // lock: the pass's own snapshot, still going. (A stopped task no longer wedges the dump itself: see
    // snapshot.int.test.ts; the dump's own deadline, 60 s here, bounds whatever else could.)
    const snap = timed(node.manager.snapshot(id));
    const del = await timed(node.manager.delete(id));
    assert.equal(del.error, undefined, String(del.error));
    assert.ok(del.ms < 2 * (60_000 + 2 * DEADLINE_MS) + 20_000, `the delete got the lock (${del.ms} ms)`);
    const s2 = await snap;
    assert.equal((s2.error as ForkdError | undefined)?.code, 'TIMEOUT', `the snapshot failed with TIMEOUT: ${String(s2.error)}`);
    assert.equal(await node.manager.recordOf(id), undefined);
    const runMounts = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').map((l) => l.split(' ')[4] ?? '').filter((m) => m.startsWith(`${node.config.runDir}/`));
    assert.deepEqual(await orphans(node), [], `mounts under the run dir: ${runMounts.join(', ')}`);
    await neighbourWorks();
  });

  test('rlimits: no core dumps, and ulimit -c cannot raise it; nofile/nproc as set', async () => {
    const host = readHostLimits();
    const want = Object.fromEntries(sandboxRlimits(host).map((r) => [r.type, r.hard]));
    const r = await run(node.manager, neighbour, 'echo "$(ulimit -c) $(ulimit -Hc) $(ulimit -n) $(ulimit -Hn) $(ulimit -u)"; ulimit -c unlimited 2>/dev/null && echo raised; ulimit -Hn 1000000 2>/dev/null && echo raised-nofile; true');
    assert.equal(r.stdout, `0 0 ${want.RLIMIT_NOFILE} ${want.RLIMIT_NOFILE} ${want.RLIMIT_NPROC}\n`);
    // Seen from the host too: the agent's (PID 1's) limits, which every process inherits.
    const limits = await readFile(`/proc/${await initPid(node.env.FORKD_CGROUP_PARENT!, neighbour)}/limits`, 'utf8');
    assert.match(limits, /^Max core file size\s+0\s+0\s/m);
  });

  test('a core dump in a sandbox writes nothing, inside or on the host', async () => {
    const pattern = (await readFile('/proc/sys/kernel/core_pattern', 'utf8')).trim();
    const root = node.storage.path(`sandboxes/${neighbour}`);
    const hostDir = pattern.startsWith('/') ? pattern.slice(0, pattern.lastIndexOf('/')) || '/' : undefined;
    const hostBefore = hostDir ? await readdir(hostDir).catch(() => [] as string[]) : [];
    const insideBefore = await coreFiles(root);
    const r = await run(node.manager, neighbour, [
      '/bin/bash',
      '-c',
      // Tries to raise the limit first, as a tenant would.
      'ulimit -c unlimited 2>/dev/null; cd /tmp && bash -c \'kill -SEGV $$\'; echo "segv $?"; cd /root && python3 -c "import os; os.abort()"; echo "abort $?"; ls /tmp /root | grep -c "^core" || true',
    ]);
    assert.equal(r.stdout, 'segv 139\nabort 134\n0\n', 'both crashed (128+11, 128+6) without "(core dumped)" files');
    assert.deepEqual(await coreFiles(root), insideBefore, 'no core file in the sandbox root on the host');
    if (hostDir) assert.deepEqual(await readdir(hostDir).catch(() => [] as string[]), hostBefore, `nothing new in ${hostDir}`);
  });

  test('fd exhaustion stops at the nofile limit; the neighbour and the node are fine', async () => {
    const want = sandboxRlimits(readHostLimits()).find((l) => l.type === 'RLIMIT_NOFILE')!.hard;
    const r = await run(node.manager, neighbour, [
      'python3',
      '-c',
      'import os\nfds=[]\ntry:\n  while True: fds.append(os.open("/dev/null", os.O_RDONLY))\nexcept OSError as e: print(e.errno, len(fds))',
    ]);
    const [errno, n] = r.stdout.trim().split(' ').map(Number);
    assert.equal(errno, 24, `EMFILE: ${r.stdout}`);
    assert.ok(n! > want - 10 && n! < want, `opened ${n} of ${want}`);
    await neighbourWorks();
    assert.ok((await node.manager.records()).length >= 1, 'the node answers');
  });

  test('a fork bomb stops at the pids limit; the neighbour is fine', async () => {
    const id = (await node.manager.create({ template: 'base', memoryMb: 256, pids: 64 })).id;
    const { process: bomb } = await node.manager.spawn(id, { argv: ['/bin/bash', '-c', 'bomb() { bomb | bomb & }; bomb'], tag: 'bomb' });
    bomb.detach();
    await waitFor(async () => (await node.manager.usage(id)).pidsLimitHits > 0, 10_000, 'the pids limit to refuse forks');
    assert.ok((await node.manager.usage(id)).pids <= 64);
    await neighbourWorks();
    await node.manager.delete(id);
    assert.deepEqual(await orphans(node), []);
  });

  test('a memory bomb is OOM-killed inside its sandbox only', async () => {
    const id = (await node.manager.create({ template: 'base', memoryMb: 128 })).id;
    const hog = await run(node.manager, id, ['python3', '-c', 'b = bytearray(1 << 30); print(len(b))']);
    assert.equal(hog.oomKilled, true);
    assert.equal((await run(node.manager, id, ['echo', 'alive'])).stdout, 'alive\n', 'its agent survived');
    await neighbourWorks();
    await node.manager.delete(id);
  });
});

describe('a daemon restart with a stuck sandbox (real daemon)', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  const env = () => ({ ...cfg.env, FORKD_GUEST_DEADLINE_S: String(DEADLINE_S) });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-stuck-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess(env());
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('SIGKILL, then start: the daemon comes back while a sandbox agent never answers; the others work', async () => {
    const create = async () => (await api(daemon!, 'POST', '/v1/sandboxes', { memoryMb: 256 })).json.id as string;
    const stuck = await create();
    const other = await create();
    assert.equal((await execHttp(daemon!, other, ['echo', 'ok'])).stdout, 'ok\n');
    const pid = await initPid(cfg.env.FORKD_CGROUP_PARENT!, stuck);
    process.kill(pid, 'SIGSTOP');
    await waitFor(() => stopped(pid), 5000, 'the agent to stop');

    await stopDaemonProcess(daemon, 'SIGKILL');
    const t0 = Date.now();
    daemon = await startDaemonProcess(env());
    const startMs = Date.now() - t0;
    assert.ok(startMs < 4 * DEADLINE_MS + 30_000, `started in ${startMs} ms`);
    assert.equal((await execHttp(daemon, other, ['echo', 'still']))?.stdout, 'still\n');
    // The stuck one was found not answering: lost, its processes dropped, and brought back (here from its files).
    const info = (await api(daemon, 'GET', `/v1/sandboxes/${stuck}`)).json;
    assert.ok(info.state === 'running' || info.state === 'failed', info.state);
    if (info.state === 'running') assert.equal((await execHttp(daemon, stuck, ['echo', 'back'])).stdout, 'back\n');
    assert.equal((await api(daemon, 'DELETE', `/v1/sandboxes/${stuck}`)).status < 300, true);
  });
});
