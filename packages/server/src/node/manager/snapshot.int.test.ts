import { existsSync } from 'node:fs';
import { readdir, readFile, statfs } from 'node:fs/promises';
import { exec } from '../../shared/exec.js';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';
import { memoryHash, startMemoryHog } from '../../testing/memory-hog.js';

/** A counter that lives in process memory and mirrors itself to /tmp/count. */
const COUNTER = ['python3', '-c', "import time\ni=0\nwhile True:\n  i+=1\n  open('/tmp/count.tmp','w').write(str(i))\n  __import__('os').rename('/tmp/count.tmp','/tmp/count')\n  time.sleep(0.02)"];

describe('snapshots, pause/resume, fork, rewind (real CRIU)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let a: string;

  const count = async (id: string) => Number((await run(node.manager, id, ['cat', '/tmp/count'])).stdout);
  const counterRunning = async (id: string) => (await (await node.manager.guest(id)).listProcesses()).some((p) => p.tag === 'counter' && p.running);

  before(async () => {
    // The 64 MB hog below restores lazily, the small sandboxes eagerly: both paths in one file.
    node = await createTestNode({ config: { lazyRestoreMinMb: 32 } });
    a = (await node.manager.create({})).id;
    (await node.manager.spawn(a, { argv: COUNTER, tag: 'counter' })).process.detach();
    await waitFor(async () => (await count(a)) > 5, 5000, 'counter to start');
  });
  after(async () => node?.dispose());

  test('the counter survives a snapshot, forks continue from it, rewind goes back and forward', async () => {
    const s1 = await node.manager.snapshot(a, { name: 'one' });
    assert.equal(s1.pinned, true);
    assert.ok(s1.frozenMs > 0 && s1.sizeBytes > 0);
    const atSnap = Number(await readFile(join(node.manager.snapshotDir(s1.id), 'rootfs/tmp/count'), 'utf8'));
    assert.ok(atSnap > 5);
    // The parent keeps running.
    await waitFor(async () => (await count(a)) > atSnap + 10, 5000, 'parent counter to go on');
    await run(node.manager, a, 'echo later > /tmp/after.txt');

    const [b] = await node.manager.fork(s1.id);
    assert.ok(b);
    assert.equal(b.forkedFrom, s1.id);
    assert.ok(await counterRunning(b.id), 'the counter process is there in the fork');
    const first = await count(b.id);
    assert.ok(first >= atSnap && first < atSnap + 200, `fork continues from ${atSnap}, not from 0: ${first}`);
    await waitFor(async () => (await count(b.id)) > first + 10, 5000, 'fork counter to diverge');
    assert.equal((await run(node.manager, b.id, ['test', '-e', '/tmp/after.txt'])).exitCode, 1, 'file written after the snapshot is absent in the fork');
    // Its own cgroup (limits apply) and its own network namespace, loopback up.
    assert.ok((await node.manager.usage(b.id)).pids >= 2, 'the fork\'s processes are in its own cgroup');
    // Not /proc/1/ns: the agent (PID 1) is not dumpable, its links are closed to the sandbox.
    const ns = async (id: string) => (await run(node.manager, id, ['readlink', '/proc/self/ns/net'])).stdout;
    assert.notEqual(await ns(b.id), await ns(a));
    assert.match((await run(node.manager, b.id, ['ip', '-br', 'addr', 'show', 'lo'])).stdout, /127\.0\.0\.1/);

    const before = await count(a);
    await node.manager.rewind(a, s1.id);
    const back = await count(a);
    assert.ok(back < before && back >= atSnap, `rewind took the counter back: ${before} -> ${back}`);
    assert.equal((await run(node.manager, a, ['test', '-e', '/tmp/after.txt'])).exitCode, 1, 'file absent after rewind');

    const leftBehind = (await node.manager.timeline(a)).find((s) => s.reason === 'rewind');
    assert.ok(leftBehind, 'the state left by the rewind was snapshotted');
    // Its images are stored (with page sharing) after the rewind returned; rewinding to it waits for that.
    await node.manager.rewind(a, leftBehind.id);
    assert.equal((await run(node.manager, a, ['cat', '/tmp/after.txt'])).stdout, 'later\n', 'present again after rewinding forward');
    await waitFor(async () => (await node.manager.getSnapshot(leftBehind.id)).sizeBytes > 0, 10_000, 'the size of the state left to be recorded');
    assert.ok((await count(a)) >= before, 'counter forward again');
    await node.manager.delete(b.id);
  });

  test('pause frees the processes; resume continues where it was', async () => {
    const p = await node.manager.pause(a);
    assert.equal(p.state, 'paused');
    assert.equal((await node.runtime.state(a)).status, 'missing', 'no processes while paused');
    const snap = (await node.manager.timeline(a)).at(-1)!;
    assert.equal(snap.reason, 'pause');
    const atPause = Number(await readFile(join(node.manager.snapshotDir(snap.id), 'rootfs/tmp/count'), 'utf8'));
    const r = await node.manager.resume(a);
    assert.equal(r.state, 'running');
    const after = await count(a);
    assert.ok(after >= atPause && after < atPause + 200, `resumed from ${atPause}: ${after}`);
    assert.ok(await counterRunning(a));
  });

  test('after resume: open files, cwd, env, a PTY session and a TCP server all still work', async () => {
    const id = (await node.manager.create({})).id;
    await run(node.manager, id, 'mkdir -p /srv && echo hello > /srv/index.html');
    const writer = "import os,time\nf=open('/tmp/log','a',buffering=1)\ni=0\nwhile True:\n  i+=1\n  f.write(f'{os.getcwd()} {os.environ[\"FOO\"]} {i}\\n')\n  time.sleep(0.05)";
    (await node.manager.spawn(id, { argv: ['python3', '-c', writer], cwd: '/srv', env: { FOO: 'bar' }, tag: 'writer' })).process.detach();
    (await node.manager.spawn(id, { argv: ['python3', '-m', 'http.server', '8080', '--bind', '127.0.0.1'], cwd: '/srv', tag: 'web' })).process.detach();
    (await node.manager.spawn(id, { argv: ['/bin/bash', '-i'], pty: { cols: 80, rows: 24 }, stdin: true, tag: 'shell' })).process.detach();
    await waitFor(async () => (await run(node.manager, id, ['curl', '-s', 'http://127.0.0.1:8080/index.html'])).stdout === 'hello\n', 10_000, 'web server up');

    await node.manager.pause(id);
    assert.equal((await node.manager.get(id)).state, 'paused');
    await node.manager.resume(id);

    const procs = await (await node.manager.guest(id)).listProcesses();
    for (const tag of ['writer', 'web', 'shell']) assert.ok(procs.some((p) => p.tag === tag && p.running), `${tag} still listed and running`);
    assert.equal((await run(node.manager, id, ['curl', '-s', 'http://127.0.0.1:8080/index.html'])).stdout, 'hello\n', 'TCP server answers');
    const lastLine = async () => (await run(node.manager, id, ['tail', '-n', '1', '/tmp/log'])).stdout.trim();
    const l1 = await lastLine();
    await new Promise((r) => setTimeout(r, 300));
    const l2 = await lastLine();
    assert.match(l2, /^\/srv bar \d+$/, 'cwd and env survived');
    assert.ok(Number(l2.split(' ')[2]) > Number(l1.split(' ')[2]), 'the open file is still written');
    let screen = '';
    const shell = await node.manager.attach(id, { tag: 'shell' }, { onStdout: (d) => void (screen += d.toString()) });
    await shell.process.write(Buffer.from('echo $((6*7))\n'));
    await waitFor(() => /[\r\n]42\r?\n/.test(screen), 5000, 'the PTY session answers');
    shell.process.detach();
    await node.manager.delete(id);
  });

  test('an idle ~100 MB sandbox: each further snapshot adds < 10 MB; deleting one never breaks another', async () => {
    const id = (await node.manager.create({ memoryMb: 1024 })).id;
    const HOG = "import os,time\nb=bytearray(os.urandom(100*1024*1024))\nopen('/tmp/ready','w').write('1')\nwhile True: time.sleep(1)";
    (await node.manager.spawn(id, { argv: ['python3', '-c', HOG], tag: 'hog' })).process.detach();
    await waitFor(async () => (await run(node.manager, id, ['test', '-e', '/tmp/ready'])).exitCode === 0, 20_000, 'hog ready');
    assert.ok((await node.manager.usage(id)).memoryBytes > 100 * 2 ** 20, 'about 100 MB resident');
    const used = async () => {
      await exec('btrfs', ['filesystem', 'sync', node.config.pool.mountPoint]);
      const st = await statfs(node.config.pool.mountPoint);
      return (st.blocks - st.bfree) * st.bsize;
    };
    const first = await node.manager.snapshot(id);
    const snaps = [first.id];
    for (let i = 0; i < 3; i++) {
      const before = await used();
      snaps.push((await node.manager.snapshot(id)).id);
      const added = (await used()) - before;
      assert.ok(added < 10 * 2 ** 20, `snapshot ${i + 2} added ${(added / 2 ** 20).toFixed(1)} MB`);
    }
    // The snapshots that others share pages with can go: the rest still restore.
    await node.manager.deleteSnapshot(snaps[0]!);
    await node.manager.deleteSnapshot(snaps[2]!);
    const [f] = await node.manager.fork(snaps[3]!);
    assert.ok((await (await node.manager.guest(f!.id)).listProcesses()).some((p) => p.tag === 'hog' && p.running));
    await node.manager.delete(f!.id);
    await node.manager.delete(id);
  });

  test('a fork keeps all its memory when its snapshot is deleted at once (lazy restore still serving)', async () => {
    const id = (await node.manager.create({ memoryMb: 1024 })).id;
    const HOG = "import os,time,hashlib\nb=bytearray(os.urandom(64*1024*1024))\nopen('/tmp/h0','w').write(hashlib.sha256(b).hexdigest())\nwhile True:\n  time.sleep(0.3)\n  open('/tmp/h1.tmp','w').write(hashlib.sha256(b).hexdigest())\n  os.rename('/tmp/h1.tmp','/tmp/h1')";
    (await node.manager.spawn(id, { argv: ['python3', '-c', HOG], tag: 'hog' })).process.detach();
    await waitFor(async () => (await run(node.manager, id, ['test', '-e', '/tmp/h1'])).exitCode === 0, 20_000, 'hog ready');
    const snap = await node.manager.snapshot(id);
    const [f] = await node.manager.fork(snap.id);
    // In a user namespace too: the restoring tasks got their userfaultfd through forkd-uffd-broker, which is gone now.
    assert.match((await run(node.manager, f!.id, ['cat', '/proc/self/uid_map'])).stdout, /^\s*0\s+[1-9]\d*\s+65536\s*$/);
    if (existsSync('/dev/userfaultfd')) assert.ok(existsSync(join(node.config.stateDir, 'bundles', f!.id, 'criu', 'lazy-pages.log')), 'the fork was restored lazily');
    const idle = (await node.manager.create({})).id;
    const [small] = await node.manager.fork((await node.manager.snapshot(idle)).id);
    assert.ok(!existsSync(join(node.config.stateDir, 'bundles', small!.id, 'criu', 'lazy-pages.log')), 'a sandbox under FORKD_LAZY_RESTORE_MIN_MB restores eagerly');
    await node.manager.delete(small!.id);
    await node.manager.delete(idle);
    assert.deepEqual((await readdir(join(node.manager.snapshotDir(snap.id), 'memory'))).filter((n) => n.startsWith('.uffd-')), [], 'no broker socket left');
    assert.equal((await exec('pgrep', ['-f', `forkd-uffd-broker ${node.config.runDir}`], { allowFailure: true })).stdout, '', 'no broker left');
    const held = await run(node.manager, f!.id, ['sh', '-c', 'ls -l /proc/[0-9]*/fd 2>/dev/null | grep -c userfaultfd']);
    assert.equal(held.stdout.trim(), '0', 'no userfaultfd or its device is left in the sandbox');
    await node.manager.deleteSnapshot(snap.id);
    await node.manager.delete(id);
    await run(node.manager, f!.id, ['rm', '-f', '/tmp/h1']);
    await waitFor(async () => (await run(node.manager, f!.id, ['test', '-e', '/tmp/h1'])).exitCode === 0, 10_000, 'a fresh hash from the fork');
    assert.equal((await run(node.manager, f!.id, ['cat', '/tmp/h1'])).stdout, (await run(node.manager, f!.id, ['cat', '/tmp/h0'])).stdout, 'memory intact');
    await node.manager.delete(f!.id);
  });

  test('a snapshot right after a lazy restore waits for its last pages: hibernated at once after resume, forked at once, the memory is whole', async () => {
    const id = (await node.manager.create({ memoryMb: 1024 })).id;
    // Every page it does not touch comes in through the lazy daemon.
    await startMemoryHog(node.manager, id, 64, 20_000);
    const sum = (sb: string) => memoryHash(node.manager, sb);
    const whole = await sum(id);
    for (let i = 0; i < 3; i++) {
      await node.manager.hibernate(id);
      await node.manager.resume(id);
    }
    const snap = await node.manager.snapshot(id);
    const [f] = await node.manager.fork(snap.id);
    const again = await node.manager.snapshot(f!.id);
    const [g] = await node.manager.fork(again.id);
    if (existsSync('/dev/userfaultfd')) assert.ok(existsSync(join(node.config.stateDir, 'bundles', g!.id, 'criu', 'lazy-pages.log')), 'restored lazily');
    assert.equal(await sum(g!.id), whole, 'the fork of a fork taken at once has all the memory');
    assert.equal(await sum(id), whole, 'the sandbox hibernated at once after each resume has all its memory');
    for (const x of [g!.id, f!.id, id]) await node.manager.delete(x);
  });

  test('a stopped job (Ctrl-Z, kill -STOP) does not hold snapshots; it stays stopped in the sandbox and its fork', async () => {
    const id = (await node.manager.create({})).id;
    await run(node.manager, id, ['sh', '-c', 'nohup sleep 1000 >/dev/null 2>&1 & echo $! > /tmp/job; kill -STOP $!']);
    const state = async (sb: string) => (await run(node.manager, sb, ['sh', '-c', 'cut -d" " -f3 /proc/$(cat /tmp/job)/stat'])).stdout.trim();
    await waitFor(async () => (await state(id)) === 'T', 5000, 'the job to stop');
    const t0 = Date.now();
    const snap = await node.manager.snapshot(id);
    // It used to hang in CRIU's ptrace attach until the 120 s checkpoint deadline, with the sandbox frozen.
    assert.ok(Date.now() - t0 < 30_000, `snapshot took ${Date.now() - t0} ms`);
    assert.equal(await state(id), 'T', 'still stopped in the sandbox');
    const [f] = await node.manager.fork(snap.id);
    assert.equal(await state(f!.id), 'T', 'stopped in the fork');
    await run(node.manager, f!.id, ['sh', '-c', 'kill -CONT $(cat /tmp/job)']);
    await waitFor(async () => (await state(f!.id)) === 'S', 5000, 'the job to go on in the fork');
    assert.equal(await state(id), 'T', 'the original is untouched');
    await node.manager.delete(f!.id);
    await node.manager.delete(id);
  });

  test('a shell running commands in a loop (a vfork parent waits for each exec) does not fail snapshots', async () => {
    const id = (await node.manager.create({})).id;
    // dash vforks for each command: its parent waits in the kernel until the child execs, which CRIU cannot
    // dump ("Unseizable non-zombie ... state D" after 10 s). The freeze is made again until no parent waits.
    await run(node.manager, id, ['sh', '-c', 'nohup sh -c "while true; do /bin/true; done" >/dev/null 2>&1 &']);
    for (let i = 0; i < 8; i++) {
      const t0 = Date.now();
      await node.manager.snapshot(id);
      assert.ok(Date.now() - t0 < 8000, `snapshot ${i} took ${Date.now() - t0} ms`);
    }
    await node.manager.delete(id);
  });

  test('10-way fork of one snapshot, all running at once', async () => {
    const forks = await node.manager.fork(a, 10);
    assert.equal(forks.length, 10);
    assert.equal(new Set(forks.map((f) => f.id)).size, 10);
    const counts = await Promise.all(forks.map((f) => count(f.id)));
    await new Promise((r) => setTimeout(r, 300));
    const later = await Promise.all(forks.map((f) => count(f.id)));
    later.forEach((v, i) => assert.ok(v > counts[i]!, `fork ${i} runs on`));
    const tree = (await node.manager.tree(a));
    assert.equal(tree.children.length, 10);
    // Forks of forks: a fork is a sandbox like any other.
    const [grandchild] = await node.manager.fork(forks[0]!.id);
    assert.ok(await counterRunning(grandchild!.id));
    const deep = (await node.manager.tree(a));
    assert.equal(deep.children.find((c) => c.sandbox.id === forks[0]!.id)?.children[0]?.sandbox.id, grandchild!.id);
    await node.manager.delete(grandchild!.id);
    await Promise.all(forks.map((f) => node.manager.delete(f.id)));
  });
});
