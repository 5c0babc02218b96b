import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { createTestNode, isRoot, type TestNode } from '../testing/test-node.js';
import { run } from '../testing/helpers.js';
import { exec } from '../shared/exec.js';

/**
 * Templates and sandboxes that point the paths forkd touches on the host
 * (/dev, /dev/shm, /dev/null, the agent's directory and socket) at host
 * paths: a host directory of mode 0700, a host file with known content, a
 * host socket that counts connections, and the kernel's core_pattern (the
 * runc masked-path CVE shape). Each case asserts the host is untouched and
 * the sandbox either works normally or fails with a coded error.
 *
 * Shapes are made twice: by the template's own setup commands (the real
 * road, as any tenant could) and by planting them in the template's root
 * volume on the host (what a hostile template import would bring, and the
 * only way to shape what a running sandbox cannot reach: a /dev that is
 * not a real directory, the sealed /.forkd).
 */
const SECRET = 'host secret, not for sandboxes\n';
const CORE_PATTERN = '/proc/sys/kernel/core_pattern';
const EVIL_PATTERN = '|/bin/false forkd-adversarial';
/** Every path runc masks by binding /dev/null over it (oci-spec maskedPaths), plus core_pattern itself. */
const MASKED = ['/proc/kcore', '/proc/keys', '/proc/latency_stats', '/proc/timer_list', '/proc/timer_stats', '/proc/sched_debug', CORE_PATTERN];

describe('adversarial paths: the host never follows a path a sandbox controls', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let victim: string; // host directory, mode 0700
  let victimFile: string;
  let victimSock: string;
  let server: Server;
  let connections = 0;
  let corePattern: string;

  before(async () => {
    node = await createTestNode();
    victim = await mkdtemp(join(tmpdir(), 'forkd-victim-'));
    await chmod(victim, 0o700);
    victimFile = join(victim, 'file');
    await writeFile(victimFile, SECRET, { mode: 0o600 });
    victimSock = join(victim, 'agent.sock');
    server = createServer((c) => {
      connections++;
      c.destroy();
    });
    await new Promise<void>((r) => server.listen(victimSock, r));
    corePattern = await readFile(CORE_PATTERN, 'utf8');
  });

  after(async () => {
    // A failed case must not leave the host's core dumps piped to a stranger.
    if ((await readFile(CORE_PATTERN, 'utf8')) !== corePattern) await writeFile(CORE_PATTERN, corePattern);
    server?.close();
    await rm(victim, { recursive: true, force: true });
    await node?.dispose();
  });

  async function assertHostIntact(what: string): Promise<void> {
    const st = await lstat(victim);
    assert.ok(st.isDirectory(), `${what}: the host directory is still a directory`);
    assert.equal(st.mode & 0o7777, 0o700, `${what}: the host directory's mode`);
    assert.deepEqual((await readdir(victim)).sort(), ['agent.sock', 'file'], `${what}: nothing made in the host directory`);
    assert.equal(await readFile(victimFile, 'utf8'), SECRET, `${what}: the host file's content`);
    assert.equal((await lstat(victimFile)).mode & 0o7777, 0o600, `${what}: the host file's mode`);
    assert.equal(connections, 0, `${what}: nothing connected to the host socket`);
    assert.equal(await readFile(CORE_PATTERN, 'utf8'), corePattern, `${what}: core_pattern`);
    const devNull = await lstat('/dev/null');
    assert.ok(devNull.isCharacterDevice() && devNull.rdev === 0x103, `${what}: the host's /dev/null`);
  }

  /** Changes a template's read-only root volume on the host, as a hostile import would have made it. */
  async function plant(template: string, fn: (root: string) => Promise<void>): Promise<void> {
    const root = node.storage.path(`templates/${template}`);
    await exec('btrfs', ['property', 'set', '-ts', root, 'ro', 'false']);
    try {
      await fn(root);
    } finally {
      await exec('btrfs', ['property', 'set', '-ts', root, 'ro', 'true']);
    }
  }

  async function replaceWithSymlink(path: string, target: string): Promise<void> {
    await exec('chattr', ['-i', path], { allowFailure: true });
    await rm(path, { recursive: true, force: true });
    await symlink(target, path);
  }

  /** Everything that works in a normal sandbox: exec, /dev's nodes, /dev/shm (POSIX shm), pts. */
  async function assertWorks(id: string, what: string): Promise<void> {
    const r = await run(
      node.manager,
      id,
      [
        'set -e',
        'test -c /dev/null && test -c /dev/zero && test -c /dev/urandom',
        'echo x > /dev/null; test "$(head -c 3 /dev/zero | wc -c)" = 3',
        'test -d /dev/shm -a ! -L /dev/shm -a -k /dev/shm',
        'test -d /dev/pts -a -d /dev/mqueue',
        `python3 -c "from multiprocessing import shared_memory as s; m = s.SharedMemory(create=True, size=16); m.buf[0] = 42; n = s.SharedMemory(m.name); print(n.buf[0]); n.close(); m.close(); m.unlink()"`,
        'python3 -c "import multiprocessing as mp; q = mp.Queue(); p = mp.Process(target=q.put, args=(7,)); p.start(); print(q.get()); p.join()"',
        'echo ok',
      ].join('\n'),
    );
    assert.equal(r.exitCode, 0, `${what}: ${r.stderr}`);
    assert.equal(r.stdout, '42\n7\nok\n', what);
  }

  /** Tries to write the kernel's core_pattern through every masked path (the CVE's payoff). */
  async function tryCorePattern(id: string): Promise<void> {
    await run(node.manager, id, MASKED.map((p) => `echo '${EVIL_PATTERN}' > ${p} 2>/dev/null`).join('; ') + '; true');
  }

  /**
   * A sandbox from the template through its whole life: create, exec,
   * snapshot, fork, pause, resume, metrics (the disk walk), with the host
   * checked after each. Either it works normally or it fails with a coded
   * error; never does the host change.
   */
  async function lifecycle(template: string): Promise<'works' | 'refused'> {
    let id: string;
    try {
      id = (await node.manager.create({ template })).id;
    } catch (err) {
      await assertHostIntact(`create from ${template} (refused)`);
      assert.ok(err instanceof ForkdError, `create from ${template} fails with a coded error: ${String(err)}`);
      assert.ok(['FAILED_PRECONDITION', 'INTERNAL'].includes(err.code), `${template}: ${err.code} ${err.message}`);
      return 'refused';
    }
    await assertHostIntact(`create from ${template}`);
    await assertWorks(id, `sandbox from ${template}`);
    await tryCorePattern(id);
    await run(node.manager, id, 'echo in-shm > /dev/shm/kept');
    await node.manager.metrics(id);
    await assertHostIntact(`exec in a sandbox from ${template}`);
    const snap = await node.manager.snapshot(id);
    const [fork] = await node.manager.fork(snap.id, 1);
    assert.ok(fork);
    await assertHostIntact(`snapshot and fork of ${template}`);
    await assertWorks(fork.id, `fork of ${template}`);
    assert.equal((await run(node.manager, fork.id, ['cat', '/dev/shm/kept'])).stdout, 'in-shm\n', '/dev/shm survives a fork');
    await node.manager.pause(id);
    await node.manager.resume(id);
    await assertHostIntact(`pause and resume of ${template}`);
    await assertWorks(id, `resumed sandbox from ${template}`);
    assert.equal((await run(node.manager, id, ['cat', '/dev/shm/kept'])).stdout, 'in-shm\n', '/dev/shm survives pause/resume');
    await tryCorePattern(fork.id);
    await assertHostIntact(`after ${template}`);
    await node.manager.delete(fork.id);
    await node.manager.delete(id);
    return 'works';
  }

  test('/dev/shm a symlink to a host directory (the reported bug)', async () => {
    await node.service.buildTemplate({ name: 'evil-shm', from: 'base', setup: [`rm -rf /dev/shm; ln -s ${victim} /dev/shm || true`] }, () => {});
    await plant('evil-shm', async (root) => {
      await mkdir(join(root, 'dev'), { recursive: true });
      await replaceWithSymlink(join(root, 'dev/shm'), victim);
    });
    assert.equal(await lifecycle('evil-shm'), 'works', 'a fresh /dev: the template cannot shape it');
  });

  test('/dev/null a symlink to core_pattern, /dev/zero to a host file (runc masked-path CVEs)', async () => {
    await node.service.buildTemplate({ name: 'evil-null', from: 'base', setup: [`rm -f /dev/null /dev/zero; ln -s ${CORE_PATTERN} /dev/null; ln -s ${victimFile} /dev/zero; true`] }, () => {});
    await plant('evil-null', async (root) => {
      await mkdir(join(root, 'dev'), { recursive: true });
      await replaceWithSymlink(join(root, 'dev/null'), CORE_PATTERN);
      await replaceWithSymlink(join(root, 'dev/zero'), victimFile);
    });
    assert.equal(await lifecycle('evil-null'), 'works');
  });

  test('a running sandbox replaces /dev/null with a symlink, then is snapshotted, forked, paused and resumed', async () => {
    const { id } = await node.manager.create({ template: 'base' });
    await run(node.manager, id, `rm -f /dev/null; ln -s ${CORE_PATTERN} /dev/null; rm -rf /dev/shm; ln -s ${victim} /dev/shm; true`);
    await tryCorePattern(id);
    const snap = await node.manager.snapshot(id);
    await assertHostIntact('snapshot of a sandbox that reshaped its own /dev');
    // runc restores its masks from the host's /dev/null, not the sandbox's; CRIU
    // refuses to restore a mask whose source the sandbox deleted (it would
    // re-create it and finds something there): the sandbox broke its own
    // restores, and they fail with a coded error.
    const outcomes: string[] = [];
    const settle = async (what: string, p: Promise<unknown>) => {
      try {
        await p;
        outcomes.push(`${what}: works`);
      } catch (err) {
        assert.ok(err instanceof ForkdError, `${what}: ${String(err)}`);
        outcomes.push(`${what}: ${err.code}`);
      }
      await assertHostIntact(what);
    };
    await settle('fork', node.manager.fork(snap.id, 1));
    await node.manager.pause(id);
    await settle('resume', node.manager.resume(id));
    for (const s of (await node.manager.list()).filter((x) => x.state === 'running')) await tryCorePattern(s.id);
    await assertHostIntact(`a sandbox that reshaped its own /dev (${outcomes.join(', ')})`);
    for (const s of await node.manager.list()) await node.manager.delete(s.id).catch(() => {});
  });

  test('/dev itself a symlink to a host directory', async () => {
    await node.service.buildTemplate({ name: 'evil-dev', from: 'base', setup: [`mv /dev /dev.old && ln -s ${victim} /dev; true`] }, () => {});
    await plant('evil-dev', async (root) => replaceWithSymlink(join(root, 'dev'), victim));
    // The template's build cannot move its /dev (a mount point); the root's /dev is emptied at a cold start.
    assert.equal(await lifecycle('evil-dev'), 'works');
  });

  test('the agent directory /.forkd a symlink to a host directory (cold template)', async () => {
    await node.service.buildTemplate({ name: 'evil-agentdir', from: 'base', setup: [`rm -rf /.forkd; ln -s ${victim} /.forkd; true`] }, () => {});
    await plant('evil-agentdir', async (root) => replaceWithSymlink(join(root, '.forkd'), victim));
    assert.equal(await lifecycle('evil-agentdir'), 'works', 'a cold start installs a fresh agent directory');
  });

  test('the agent socket a symlink to a host socket (cold template)', async () => {
    await node.service.buildTemplate({ name: 'evil-sock', from: 'base', setup: [] }, () => {});
    await plant('evil-sock', async (root) => {
      await exec('chattr', ['-i', join(root, '.forkd')]);
      await replaceWithSymlink(join(root, '.forkd/agent.sock'), victimSock);
    });
    assert.equal(await lifecycle('evil-sock'), 'works');
  });

  test('a warm template whose /.forkd points at a host directory holding a listening socket is refused', async () => {
    await node.service.buildTemplate({ name: 'evil-warm-dir', from: 'base', setup: [], start: 'exec sleep infinity' }, () => {});
    await plant('evil-warm-dir', async (root) => {
      // The same path exists inside the root, so CRIU re-binds the agent's socket there (inside) and the restore succeeds.
      await mkdir(join(root, victim.slice(1)), { recursive: true });
      await replaceWithSymlink(join(root, '.forkd'), victim);
    });
    await assert.rejects(node.manager.create({ template: 'evil-warm-dir' }), (err: unknown) => err instanceof ForkdError && ['FAILED_PRECONDITION', 'INTERNAL'].includes(err.code));
    await assertHostIntact('warm template with a symlinked agent directory');
    assert.deepEqual((await node.manager.list()).filter((s) => s.template === 'evil-warm-dir'), [], 'the refused sandbox is gone');
  });

  test('a warm template whose agent socket is a symlink to a host socket', async () => {
    await node.service.buildTemplate({ name: 'evil-warm-sock', from: 'base', setup: [], start: 'exec sleep infinity' }, () => {});
    await plant('evil-warm-sock', async (root) => {
      await exec('chattr', ['-i', join(root, '.forkd')]);
      await replaceWithSymlink(join(root, '.forkd/agent.sock'), victimSock);
    });
    // CRIU re-binds the agent's socket (inside the sandbox) over the planted link.
    assert.equal(await lifecycle('evil-warm-sock'), 'works');
  });

  test('a warm template racing to swap /.forkd for a symlink while it is restored', async () => {
    const swap = `while :; do mv /.forkd /.forkd-$$ 2>/dev/null && ln -s ${victim} /.forkd; done`;
    await node.service.buildTemplate({ name: 'evil-race', from: 'base', setup: [`mkdir -p ${victim}`], start: swap }, () => {});
    for (let i = 0; i < 3; i++) {
      const r = await node.manager.create({ template: 'evil-race' }).then(
        (s) => s.id,
        (err: unknown) => {
          assert.ok(err instanceof ForkdError && ['FAILED_PRECONDITION', 'INTERNAL', 'TIMEOUT'].includes(err.code), String(err));
          return undefined;
        },
      );
      await assertHostIntact(`race ${i}`);
      if (r) {
        // It sealed first: the loop's mv fails on an immutable directory, and the sandbox works.
        assert.equal((await run(node.manager, r, 'echo hi')).stdout, 'hi\n');
        await node.manager.delete(r);
      }
    }
  });

  test('the files API given symlinks, hardlinks and .. paths stays inside the sandbox', async () => {
    const { id } = await node.manager.create({ template: 'base' });
    const g = await node.manager.guest(id);
    // The host paths exist inside too (empty), so links to them resolve, inside.
    await run(node.manager, id, `mkdir -p ${victim}; ln -s ${victimFile} /tmp/to-file; ln -s ${victim} /tmp/to-dir; ln -s / /tmp/to-root; ln /etc/hostname /tmp/hard; true`);
    const read = async (p: string) => {
      const f = await g.readFile(p);
      const parts: Buffer[] = [];
      for await (const c of f.chunks) parts.push(c);
      return Buffer.concat(parts).toString();
    };
    // Reads: a link to a host path names the sandbox's own (missing) file.
    await assert.rejects(read('/tmp/to-file'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    await assert.rejects(read('/tmp/to-dir/file'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    assert.equal(await read('/../../../../etc/hostname'), await read('/etc/hostname'), '.. stops at the sandbox root');
    assert.equal(await read('/tmp/to-root/../../etc/hostname'), await read('/etc/hostname'));
    // Writes through the same links land inside the sandbox.
    await g.writeFile('/tmp/to-file', Buffer.from('from the api\n'));
    await g.writeFile('/tmp/to-dir/new', Buffer.from('x'));
    await g.writeFile('/../../../tmp/dotdot', Buffer.from('y'));
    await g.writeFile('/tmp/hard', Buffer.from('hard\n'));
    await g.mkdir('/tmp/to-dir/sub');
    await g.move('/tmp/to-dir/new', '/tmp/to-dir/moved');
    await g.remove('/tmp/to-dir/sub', true);
    assert.equal(await read(victimFile), 'from the api\n', 'the sandbox has its own file at that path');
    assert.equal(await read('/etc/hostname'), 'hard\n', 'a hardlink is the sandbox\'s own file');
    assert.deepEqual((await g.listDir('/tmp/to-dir')).map((e) => e.name).sort(), ['file', 'moved']);
    await g.remove('/tmp/to-dir', true);
    await assertHostIntact('files API');
    await node.manager.delete(id);
  });
});
