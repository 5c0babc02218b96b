import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { REPO_ROOT } from '../../shared/config.js';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';
import { FORKD_GUEST_PROTOCOL } from '../guest/guest-frames.js';

describe('sandbox (real Btrfs, runc, guest agent)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let id: string;

  before(async () => {
    node = await createTestNode();
    id = (await node.manager.create({ template: 'base', memoryMb: 256, pids: 128 })).id;
  });
  after(async () => {
    await node?.dispose();
  });

  describe('exec', () => {
    test('stdout and exit codes pass through', async () => {
      const r = await run(node.manager, id, ['echo', 'hi']);
      assert.equal(r.stdout, 'hi\n');
      assert.equal(r.exitCode, 0);
      const f = await run(node.manager, id, 'echo oops >&2; exit 3');
      assert.equal(f.exitCode, 3);
      assert.equal(f.stderr, 'oops\n');
      assert.equal(f.stdout, '');
    });

    test('python3 runs', async () => {
      const r = await run(node.manager, id, ['python3', '-c', 'print(6*7)']);
      assert.equal(r.stdout, '42\n');
    });

    test('stdin round trip through cat', async () => {
      const input = 'line one\nline two\n' + randomBytes(3000).toString('hex');
      const r = await run(node.manager, id, ['cat'], { input });
      assert.equal(r.stdout, input);
    });

    test('env, cwd and user', async () => {
      const r = await run(node.manager, id, 'echo "$FOO $(pwd) $(id -un)"', { env: { FOO: 'bar' }, cwd: '/tmp', user: 'user' });
      assert.equal(r.stdout, 'bar /tmp user\n');
      const root = await run(node.manager, id, 'id -u; echo $HOME');
      assert.equal(root.stdout, '0\n/root\n');
    });

    test('a missing program is a NOT_FOUND error, not a hang', async () => {
      await assert.rejects(run(node.manager, id, ['/no/such/program']), { code: 'NOT_FOUND' });
    });

    test('a background process outlives its request and can be re-attached', async () => {
      const { process } = await node.manager.spawn(id, { argv: ['/bin/bash', '-c', 'i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done'], tag: 'ticker' });
      const pid = process.pid;
      process.detach();
      await new Promise((r) => setTimeout(r, 500));
      const procs = await (await node.manager.guest(id)).listProcesses();
      assert.ok(procs.some((p) => p.pid === pid && p.running && p.tag === 'ticker'), 'still listed as running');
      // Output produced while detached is buffered and replayed first (a tick or two
      // may already have gone to the first connection before it detached).
      let seen = '';
      const byTag = await node.manager.attach(id, { tag: 'ticker' }, { onStdout: (d) => void (seen += d.toString()) });
      await waitFor(() => /tick [5-9]/.test(seen), 5000, 'replayed and live output');
      const firstSeen = Number(/^tick (\d+)/.exec(seen)?.[1]);
      assert.ok(firstSeen <= 2, `replay starts with what was produced while detached: ${seen.slice(0, 40)}`);
      byTag.process.detach();
      let again = '';
      const byPid = await node.manager.attach(id, { pid }, { onStdout: (d) => void (again += d.toString()) });
      await waitFor(() => /tick \d+/.test(again), 5000, 'output after re-attach by pid');
      await (await node.manager.guest(id)).kill({ pid }, 15);
      const exit = await byPid.exit;
      assert.equal(exit?.signal, 15);
    });
  });

  describe('init', () => {
    test('PID 1 reaps orphans: no zombies are left', async () => {
      await run(node.manager, id, 'for i in 1 2 3 4 5; do (sleep 0.2 &) ; done; exit 0');
      await new Promise((r) => setTimeout(r, 600));
      const ps = await run(node.manager, id, ['ps', '-eo', 'stat=,comm=']);
      assert.ok(!ps.stdout.split('\n').some((l) => l.trim().startsWith('Z')), `no zombies:\n${ps.stdout}`);
    });
  });

  describe('pty', () => {
    test('interactive bash computes and resizes', async () => {
      let screen = '';
      const { process, exit } = await node.manager.spawn(id, { argv: ['/bin/bash', '-i'], pty: { cols: 80, rows: 24 }, stdin: true }, { onStdout: (d) => void (screen += d.toString()) });
      await process.write(Buffer.from('echo $((6*7))\n'));
      await waitFor(() => /[\r\n]42\r?\n/.test(screen), 5000, '42 on the terminal');
      await process.write(Buffer.from('tput cols\n'));
      await waitFor(() => /[\r\n]80\r?\n/.test(screen), 5000, 'tput cols = 80');
      process.resize(132, 40);
      await process.write(Buffer.from('tput cols\n'));
      await waitFor(() => /[\r\n]132\r?\n/.test(screen), 5000, 'tput cols = 132 after resize');
      await process.write(Buffer.from('exit 7\n'));
      assert.equal((await exit)?.exitCode, 7);
    });
  });

  describe('files', () => {
    test('100 MB of random bytes round-trip byte-identical', async () => {
      const g = await node.manager.guest(id);
      const size = 100 * 1024 * 1024;
      const hash = createHash('sha256');
      async function* source() {
        for (let off = 0; off < size; off += 1024 * 1024) {
          const b = randomBytes(1024 * 1024);
          hash.update(b);
          yield b;
        }
      }
      assert.equal(await g.writeFile('/tmp/big.bin', source()), size);
      const want = hash.digest('hex');
      const f = await g.readFile('/tmp/big.bin');
      assert.equal(f.size, size);
      const h2 = createHash('sha256');
      let n = 0;
      for await (const c of f.chunks) {
        h2.update(c);
        n += c.length;
      }
      assert.equal(n, size);
      assert.equal(h2.digest('hex'), want);
      const inside = await run(node.manager, id, ['sha256sum', '/tmp/big.bin']);
      assert.equal(inside.stdout.split(' ')[0], want);
      await g.remove('/tmp/big.bin');
    });

    test('a symlink to /etc/shadow resolves to the sandbox, never the host', async () => {
      const g = await node.manager.guest(id);
      await run(node.manager, id, 'echo sandbox-secret > /etc/shadow; ln -sf /etc/shadow /tmp/shadow-link');
      const f = await g.readFile('/tmp/shadow-link');
      let text = '';
      for await (const c of f.chunks) text += c.toString();
      assert.equal(text, 'sandbox-secret\n');
      const host = await readFile('/etc/shadow', 'utf8').catch(() => '');
      assert.notEqual(text, host);
    });

    test('../.. cannot leave the sandbox root', async () => {
      const g = await node.manager.guest(id);
      const name = `forkd-escape-${randomBytes(4).toString('hex')}`;
      await g.writeFile(`/../../../../../tmp/${name}`, Buffer.from('inside'));
      assert.equal(existsSync(`/tmp/${name}`), false, 'nothing written on the host');
      assert.equal(existsSync(`${(await node.manager.rootfs(id))}/tmp/${name}`), true, 'written inside the sandbox root');
      const st = await g.stat(`/../../..${REPO_ROOT}`).catch((e) => e);
      assert.equal(st.code, 'NOT_FOUND');
    });

    test('list, stat, mkdir -p, move, remove and watch', async () => {
      const g = await node.manager.guest(id);
      await g.mkdir('/work/a/b/c');
      await g.writeFile('/work/a/b/c/f.txt', Buffer.from('hello'));
      const st = await g.stat('/work/a/b/c/f.txt');
      assert.equal(st.type, 'file');
      assert.equal(st.size, 5);
      const shallow = await g.listDir('/work', 1);
      assert.deepEqual(shallow.map((e) => e.name), ['a']);
      const deep = await g.listDir('/work', 3);
      assert.ok(deep.some((e) => e.path === '/work/a/b/c' && e.type === 'dir'));
      const events: string[] = [];
      const w = await g.watch('/work', false, (e) => void events.push(`${e.type}:${e.name}`));
      await g.writeFile('/work/new.txt', Buffer.from('x'));
      await waitFor(() => events.some((e) => e === 'create:new.txt'), 5000, 'watch event');
      w.close();
      await g.move('/work/a/b/c/f.txt', '/work/moved.txt');
      assert.equal((await g.stat('/work/moved.txt')).size, 5);
      await assert.rejects(g.stat('/work/a/b/c/f.txt'), { code: 'NOT_FOUND' });
      await assert.rejects(g.remove('/work/a'), { code: 'INVALID_ARGUMENT' });
      await g.remove('/work', true);
      await assert.rejects(g.stat('/work'), { code: 'NOT_FOUND' });
    });
  });

  describe('isolation', () => {
    test('ps shows only the sandbox, hostname is its id, the host checkout is invisible', async () => {
      const ps = await run(node.manager, id, ['ps', '-e', '-o', 'pid=,comm=']);
      const rows = ps.stdout.trim().split('\n').map((l) => l.trim());
      assert.ok(rows[0]?.startsWith('1 '), `PID 1 is the guest agent: ${rows[0]}`);
      assert.ok(rows.length < 10, `only the sandbox's processes:\n${ps.stdout}`);
      assert.ok(!rows.some((r) => /\b(node|runc|systemd|sshd)\b/.test(r)), 'no host processes');
      assert.equal((await run(node.manager, id, ['hostname'])).stdout.trim(), id);
      assert.equal((await run(node.manager, id, ['test', '-e', REPO_ROOT])).exitCode, 1);
      assert.equal((await run(node.manager, id, ['test', '-e', node.config.stateDir])).exitCode, 1);
      const net = await run(node.manager, id, 'ls /sys/class/net');
      assert.equal(net.stdout.trim(), 'lo');
    });

    test('the agent socket cannot be swapped for a symlink to a host socket', async () => {
      const r = await run(node.manager, id, 'rm -f /.forkd/agent.sock; ln -sf /run/host.sock /.forkd/x; mv /.forkd /.forkd-moved; echo done');
      assert.match(r.stderr, /Operation not permitted/);
      const still = await run(node.manager, id, ['ls', '-A', '/.forkd']);
      assert.deepEqual(still.stdout.trim().split('\n').sort(), ['agent.sock', 'init']);
      assert.equal((await (await node.manager.guest(id)).info()).version, FORKD_GUEST_PROTOCOL);
    });

    test('a connection that never sends its request is closed by the agent', async () => {
      const sock = createConnection(`${(await node.manager.rootfs(id))}/.forkd/agent.sock`);
      const t0 = Date.now();
      await new Promise<void>((resolve, reject) => {
        sock.on('close', () => resolve());
        sock.on('error', reject);
        setTimeout(() => reject(new Error('still open after 15 s')), 15_000).unref();
      });
      assert.ok(Date.now() - t0 >= 9_000, 'not before the timeout');
    });

    test('metrics report disk: the root filesystem and what the sandbox wrote itself', async () => {
      const before = await node.manager.metrics(id);
      assert.ok(before.diskBytes > 50 * 2 ** 20, `the base root is counted: ${before.diskBytes}`);
      const other = (await node.manager.create({ template: 'base' })).id;
      await run(node.manager, other, 'head -c 8M /dev/urandom > /root/blob && sync');
      const m = await node.manager.metrics(other);
      assert.ok(m.diskWrittenBytes >= 8 * 2 ** 20 && m.diskWrittenBytes < 64 * 2 ** 20, `written ${m.diskWrittenBytes}`);
      assert.ok(m.memoryBytes > 0 && m.pids >= 1);
      await node.manager.delete(other);
    });

    test('a memory hog is OOM-killed and reported; the sandbox and its neighbour live on', async () => {
      const other = (await node.manager.create({ template: 'base' })).id;
      const hog = await run(node.manager, id, ['python3', '-c', 'b = bytearray(1 << 30); print(len(b))']);
      assert.equal(hog.signal, 9);
      assert.equal(hog.oomKilled, true);
      assert.equal((await run(node.manager, id, ['echo', 'alive'])).stdout, 'alive\n');
      assert.equal((await run(node.manager, other, ['echo', 'neighbour'])).stdout, 'neighbour\n');
      await node.manager.delete(other);
    });

    test('a fork bomb is stopped by the pids limit', async () => {
      const { process } = await node.manager.spawn(id, { argv: ['/bin/bash', '-c', 'bomb() { bomb | bomb & }; bomb'], tag: 'bomb' });
      process.detach();
      await waitFor(async () => (await node.manager.usage(id)).pidsLimitHits > 0, 10_000, 'the pids limit to refuse forks');
      const usage = await node.manager.usage(id);
      assert.ok(usage.pids <= 128, `pids ${usage.pids} within the limit`);
      // Deleting still reaps every process of the bomb.
      await node.manager.delete(id);
      assert.equal((await node.runtime.list()).includes(id), false);
      id = (await node.manager.create({ template: 'base' })).id;
      assert.equal((await run(node.manager, id, ['echo', 'fresh'])).stdout, 'fresh\n');
    });
  });
});
