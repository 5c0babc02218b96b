import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { FileEntry, ForkdError, ProcessInfo, SANDBOX_ID_PATTERN, SandboxInfo, SandboxMetrics, SnapshotInfo, TemplateInfo, type WatchEvent } from '@forkd/protocol';
import type { NodeService } from './node-service.js';
import { run } from '../testing/helpers.js';

export interface OpenedNode {
  node: NodeService;
  close(): Promise<void>;
}


async function until<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** How many `sleep` processes the sandbox runs. */
const SLEEPERS = 'cat /proc/[0-9]*/comm 2>/dev/null | grep -cx sleep || true';

const code = (c: ForkdError['code']) => (e: unknown) => e instanceof ForkdError && e.code === c;

async function readAll(chunks: AsyncIterable<Buffer>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of chunks) parts.push(c);
  return Buffer.concat(parts);
}

/** One HTTP/1.0 GET through connectPort: the answer's text, or `refused` when nothing listened. */
async function httpGet(node: NodeService, id: string, port: number, path: string): Promise<{ refused: boolean; text: string }> {
  const c = await node.connectPort(id, port);
  const parts: Buffer[] = [];
  c.stream.on('data', (d: Buffer) => parts.push(d));
  c.stream.on('error', () => {});
  c.stream.write(`GET ${path} HTTP/1.0\r\nHost: sandbox\r\n\r\n`);
  const ended = new Promise<void>((r) => {
    c.stream.once('end', r);
    c.stream.once('close', r);
  });
  const d = await c.done;
  await Promise.race([ended, new Promise((r) => setTimeout(r, 1000))]);
  return { refused: d.refused, text: Buffer.concat(parts).toString() };
}

/**
 * What every implementation of the node contract must do, against a real
 * node: registers node:test tests under `name`. `open` is called once; one
 * sandbox serves most tests (they run in order), so the whole suite stays
 * within a few minutes on a small machine.
 */
export function nodeConformance(name: string, open: () => Promise<OpenedNode>, opts: { skip?: string | false } = {}): void {
  describe(`node contract: ${name}`, { concurrency: 1, skip: opts.skip ?? false }, () => {
    let opened: OpenedNode | undefined;
    let node: NodeService;
    let id = '';
    /** A snapshot of `id` holding /root/before.txt only (the rewind test's). */
    let earlier = '';
    const made: string[] = [];

    before(async () => {
      opened = await open();
      node = opened.node;
    });
    after(async () => {
      for (const s of made) await node.delete(s).catch(() => {});
      await opened?.close();
    });

    test('create answers a running sandbox; get and list show it', async () => {
      const s = await node.create({ template: 'base', memoryMb: 256, env: { GREETING: 'hello' }, metadata: { suite: 'conformance' } });
      id = s.id;
      made.push(id);
      SandboxInfo.parse(s);
      assert.match(s.id, SANDBOX_ID_PATTERN);
      assert.equal(s.state, 'running');
      assert.equal(s.template, 'base');
      assert.equal(s.limits.memoryMb, 256);
      assert.deepEqual(s.metadata, { suite: 'conformance' });
      assert.equal((await node.get(id)).id, id);
      assert.ok((await node.list()).some((x) => x.id === id));
      await assert.rejects(node.get('sbx-000000000000'), code('NOT_FOUND'));
      await assert.rejects(node.spawn('sbx-000000000000', { argv: ['true'] }), code('NOT_FOUND'));
    });

    test('spawn: output, exit code, env (the sandbox\'s and its own), stdin', async () => {
      const r = await run(node, id, 'echo "$GREETING $WHO"; echo oops >&2; exit 7', { env: { WHO: 'world' } });
      assert.deepEqual([r.stdout, r.stderr, r.exitCode, r.signal, r.oomKilled], ['hello world\n', 'oops\n', 7, 0, false]);
      assert.equal((await run(node, id, ['cat'], { input: 'through stdin' })).stdout, 'through stdin');
      const tty = await run(node, id, ['stty', 'size'], { pty: { cols: 101, rows: 33 } });
      assert.equal(tty.stdout.trim(), '33 101', 'a pty of the size asked for');
      await assert.rejects(node.spawn(id, { argv: ['/no/such/program'] }));
    });

    test('a background process: listed, attached by tag, signalled by selector', async () => {
      const bg = await node.spawn(id, { argv: ['/bin/bash', '-c', 'while true; do echo tick; sleep 0.2; done'], tag: 'conf-bg' });
      bg.process.detach();
      assert.equal(await bg.exit, null, 'a detached stream ends without an exit');
      const procs = await node.listProcesses(id);
      for (const p of procs) ProcessInfo.parse(p);
      assert.ok(procs.some((p) => p.tag === 'conf-bg' && p.running && p.pid === bg.process.pid));
      const out: Buffer[] = [];
      const att = await node.attach(id, { tag: 'conf-bg' }, { onStdout: (d) => void out.push(d) });
      assert.equal(att.process.pid, bg.process.pid);
      await until('output of the attached process', async () => Buffer.concat(out).toString().includes('tick'));
      await node.signal(id, { tag: 'conf-bg' }, 15);
      const e = await att.exit;
      assert.equal(e?.signal, 15);
      await assert.rejects(node.attach(id, { tag: 'no-such-tag' }));
    });

    test('stdin by selector and a signal through the handle', async () => {
      const out: Buffer[] = [];
      const cat = await node.spawn(id, { argv: ['cat'], tag: 'conf-cat', stdin: true }, { onStdout: (d) => void out.push(d) });
      await node.writeStdin(id, { tag: 'conf-cat' }, Buffer.from('by selector'), true);
      assert.equal((await cat.exit)?.exitCode, 0);
      assert.equal(Buffer.concat(out).toString(), 'by selector');
      const sleeper = await node.spawn(id, { argv: ['sleep', '600'] });
      sleeper.process.signal(9);
      assert.equal((await sleeper.exit)?.signal, 9);
    });

    test('files: write and read byte for byte (1 MB), stat, listDir, mkdir, move, remove', async () => {
      const big = randomBytes(1024 * 1024 + 3);
      assert.equal(await node.mkdir(id, '/tmp/conf'), undefined);
      assert.equal(await node.writeFile(id, '/tmp/conf/big.bin', big), big.length);
      const f = await node.readFile(id, '/tmp/conf/big.bin');
      assert.equal(f.size, big.length);
      assert.ok((await readAll(f.chunks)).equals(big), 'the same bytes');
      async function* parts() {
        yield Buffer.from('one,');
        yield Buffer.from('two');
      }
      assert.equal(await node.writeFile(id, '/tmp/conf/small.txt', parts(), { mode: 0o640 }), 7);
      const st = FileEntry.parse(await node.stat(id, '/tmp/conf/small.txt'));
      assert.deepEqual([st.type, st.size, st.mode & 0o777], ['file', 7, 0o640]);
      await node.mkdir(id, '/tmp/conf/sub');
      const names = (await node.listDir(id, '/tmp/conf')).map((e) => e.name).sort();
      assert.deepEqual(names, ['big.bin', 'small.txt', 'sub']);
      await node.move(id, '/tmp/conf/small.txt', '/tmp/conf/sub/moved.txt');
      assert.equal((await readAll((await node.readFile(id, '/tmp/conf/sub/moved.txt')).chunks)).toString(), 'one,two');
      await assert.rejects(node.stat(id, '/tmp/conf/small.txt'), code('NOT_FOUND'));
      await assert.rejects(node.readFile(id, '/tmp/conf/missing'), code('NOT_FOUND'));
      await node.remove(id, '/tmp/conf', true);
      await assert.rejects(node.stat(id, '/tmp/conf'), code('NOT_FOUND'));
    });

    test('files: metadata is stored with a write (user.* xattrs), reported by stat and listDir, replaced in its scope', async () => {
      // The sandbox's own disk (/tmp may be a tmpfs without user xattrs on older kernels).
      await node.writeFile(id, '/root/meta/a.txt', Buffer.from('a'), { metadata: { author: 'mish', 'e2b.k': 'v' } });
      const st = FileEntry.parse(await node.stat(id, '/root/meta/a.txt'));
      assert.deepEqual(st.metadata, { author: 'mish', 'e2b.k': 'v' });
      assert.deepEqual((await node.listDir(id, '/root/meta')).find((e) => e.name === 'a.txt')?.metadata, { author: 'mish', 'e2b.k': 'v' });
      await node.writeFile(id, '/root/meta/a.txt', Buffer.from('b'));
      assert.deepEqual((await node.stat(id, '/root/meta/a.txt')).metadata, { author: 'mish', 'e2b.k': 'v' }, 'a write without metadata keeps it');
      await node.writeFile(id, '/root/meta/a.txt', Buffer.from('c'), { metadata: {}, metadataScope: 'e2b.' });
      assert.deepEqual((await node.stat(id, '/root/meta/a.txt')).metadata, { author: 'mish' });
      assert.equal((await node.stat(id, '/root/meta')).metadata, undefined);
      await assert.rejects(node.writeFile(id, '/root/meta/bad.txt', Buffer.from('x'), { metadata: { 'bad key': 'v' } }), code('INVALID_ARGUMENT'));
      await assert.rejects(node.stat(id, '/root/meta/bad.txt'), code('NOT_FOUND'));
      await node.remove(id, '/root/meta', true);
    });

    test('watch sees a write', async () => {
      await node.mkdir(id, '/tmp/watched');
      const events: WatchEvent[] = [];
      const w = await node.watch(id, '/tmp/watched', false, (e) => void events.push(e));
      await node.writeFile(id, '/tmp/watched/new.txt', Buffer.from('x'));
      await until('a watch event', async () => events.some((e) => e.name === 'new.txt'), 10_000);
      w.close();
      await w.done;
    });

    test('connectPort reaches a server in the sandbox; a port nobody listens on is refused', async () => {
      await node.mkdir(id, '/tmp/www');
      await node.writeFile(id, '/tmp/www/hello.txt', Buffer.from('hi from the sandbox'));
      const srv = await node.spawn(id, { argv: ['python3', '-m', 'http.server', '8123', '--bind', '127.0.0.1', '--directory', '/tmp/www'], tag: 'conf-www' });
      srv.process.detach();
      const got = await until('the server in the sandbox', async () => {
        const r = await httpGet(node, id, 8123, '/hello.txt');
        return !r.refused && r.text.includes('hi from the sandbox') && r;
      });
      assert.match(got.text, /^HTTP\/1\.0 200/);
      assert.equal((await httpGet(node, id, 8124, '/')).refused, true);
      await node.signal(id, { tag: 'conf-www' }, 9);
    });

    test('snapshot, timeline, getSnapshot, pin, deleteSnapshot', async () => {
      const snap = SnapshotInfo.parse(await node.snapshot(id, { name: 'conf-1' }));
      assert.deepEqual([snap.sandboxId, snap.name, snap.reason], [id, 'conf-1', 'manual']);
      assert.ok((await node.timeline(id)).some((s) => s.id === snap.id));
      assert.equal((await node.getSnapshot(snap.id)).id, snap.id);
      assert.equal((await node.pinSnapshot(snap.id, true)).pinned, true);
      assert.equal((await node.pinSnapshot(snap.id, false)).pinned, false);
      await node.deleteSnapshot(snap.id);
      await assert.rejects(node.getSnapshot(snap.id), code('NOT_FOUND'));
      assert.equal((await run(node, id, 'echo still here')).stdout, 'still here\n');
    });

    test('pause then resume', async () => {
      assert.equal((await node.pause(id)).state, 'paused');
      assert.equal((await node.get(id)).state, 'paused');
      assert.equal((await node.resume(id)).state, 'running');
      assert.equal((await run(node, id, 'echo awake')).stdout, 'awake\n');
    });

    test('pause without memory: files kept, processes gone, resume starts it cold (same id, limits, env); resume memory false after a memory pause', async () => {
      const before = await node.get(id);
      await node.writeFile(id, '/root/kept.txt', Buffer.from('kept'));
      const sleeper = await node.spawn(id, { argv: ['sleep', '3600'], tag: 'conf-fs-sleeper' });
      sleeper.process.detach();
      // A stream still attached to a process of before ends (it does not wait for a process that is gone).
      const attached = await node.spawn(id, { argv: ['sleep', '3600'] });
      const ended = attached.exit.then(() => 'ended', () => 'ended');
      const pauses = async () => (await node.timeline(id)).filter((s) => s.reason === 'pause').length;
      const n = await pauses();
      const paused = await node.pause(id, { memory: false });
      assert.equal(paused.state, 'paused');
      assert.equal(await pauses(), n, 'no pause snapshot taken');
      const back = await node.resume(id);
      assert.deepEqual([back.id, back.state, back.limits, back.env], [id, 'running', before.limits, before.env]);
      assert.equal((await run(node, id, 'cat /root/kept.txt')).stdout, 'kept');
      assert.equal(await Promise.race([ended, new Promise((r) => setTimeout(() => r('still open'), 15_000))]), 'ended');
      assert.ok(!(await node.listProcesses(id)).some((p) => p.tag === 'conf-fs-sleeper'), 'the processes of before are gone');
      assert.equal((await run(node, id, SLEEPERS)).stdout, '0\n');
      // A pause that kept memory, resumed without it: a restart on the same files.
      const again = await node.spawn(id, { argv: ['sleep', '3600'], tag: 'conf-fs-sleeper2' });
      again.process.detach();
      await node.pause(id);
      assert.equal((await node.resume(id, { memory: false })).state, 'running');
      assert.equal((await run(node, id, `cat /root/kept.txt; ${SLEEPERS}`)).stdout, 'kept0\n');
    });

    test('rewind to an earlier snapshot: a file written after it is gone', async () => {
      await node.writeFile(id, '/root/before.txt', Buffer.from('before'));
      const snap = await node.snapshot(id, {});
      earlier = snap.id;
      await node.writeFile(id, '/root/after.txt', Buffer.from('after'));
      assert.equal((await node.rewind(id, snap.id)).state, 'running');
      await assert.rejects(node.stat(id, '/root/after.txt'), code('NOT_FOUND'));
      assert.equal((await readAll((await node.readFile(id, '/root/before.txt')).chunks)).toString(), 'before');
    });

    test('fork: both children see the parent\'s file, their own writes diverge; tree; a fork of a snapshot', async () => {
      await node.writeFile(id, '/root/parent.txt', Buffer.from('from the parent'));
      const kids = await node.fork(id, 2);
      made.push(...kids.map((k) => k.id));
      assert.equal(kids.length, 2);
      const [a, b] = kids as [SandboxInfo, SandboxInfo];
      assert.notEqual(a.id, b.id);
      for (const k of kids) {
        assert.equal(k.state, 'running');
        assert.equal((await run(node, k.id, 'cat /root/parent.txt')).stdout, 'from the parent');
      }
      await node.writeFile(a.id, '/root/own.txt', Buffer.from('a'));
      await assert.rejects(node.stat(b.id, '/root/own.txt'), code('NOT_FOUND'));
      await assert.rejects(node.stat(id, '/root/own.txt'), code('NOT_FOUND'));
      const tree = await node.tree(id);
      assert.equal(tree.sandbox.id, id);
      const ids = new Set<string>();
      const walk = (t: typeof tree) => {
        ids.add(t.sandbox.id);
        t.children.forEach(walk);
      };
      walk(tree);
      assert.ok(ids.has(a.id) && ids.has(b.id), 'the forks are in the parent\'s tree');
      await node.delete(b.id);
      await assert.rejects(node.get(b.id), code('NOT_FOUND'));
      const [c] = await node.fork(earlier, 1, undefined, { metadata: { conf: 'own' }, env: { CONF_FORK: 'yes' } });
      made.push(c!.id);
      assert.deepEqual(c!.metadata, { conf: 'own' }, 'the metadata given, not the parent\'s');
      assert.equal(c!.env.CONF_FORK, 'yes');
      assert.equal((await run(node, c!.id, 'echo $CONF_FORK')).stdout, 'yes\n', 'a process started in the fork gets the env given');
      assert.equal((await run(node, c!.id, 'cat /root/before.txt; test -e /root/parent.txt || echo " no parent file"')).stdout, 'before no parent file\n', 'a fork of a snapshot has that snapshot\'s files');
      await node.delete(c!.id);
    });

    test('lifetime, metrics and templates', async () => {
      assert.ok((await node.setTimeout(id, 3600)).expiresAt, 'a lifetime shows as expiresAt');
      assert.equal((await node.setTimeout(id, 0)).expiresAt, undefined);
      const m = SandboxMetrics.parse(await node.metrics(id));
      assert.ok(m.memoryBytes > 0 && m.pids > 0);
      const templates = await node.templates();
      for (const t of templates) TemplateInfo.parse(t);
      assert.ok(templates.some((t) => t.name === 'base'));
      await assert.rejects(node.deleteTemplate('base'), code('FAILED_PRECONDITION'));
    });

    test('setNetwork: egress and its rules recorded and applied, domain rules recorded, a malformed one refused, back to none', async () => {
      const set = await node.setNetwork(id, { mode: 'egress', allowOut: ['203.0.113.7'], denyOut: ['0.0.0.0/0'] });
      assert.deepEqual(set.network, { mode: 'egress', allowOut: ['203.0.113.7'], denyOut: ['0.0.0.0/0'] });
      assert.deepEqual((await node.get(id)).network, set.network);
      assert.equal((await run(node, id, 'ls /sys/class/net | sort | tr "\\n" " "')).stdout, 'eth0 lo ');
      const named = await node.setNetwork(id, { mode: 'egress', allowOut: ['*.example.com'], denyOut: ['pypi.org', '0.0.0.0/0'] });
      assert.deepEqual(named.network, { mode: 'egress', allowOut: ['*.example.com'], denyOut: ['pypi.org', '0.0.0.0/0'] });
      assert.deepEqual((await node.get(id)).network, named.network);
      await assert.rejects(node.setNetwork(id, { mode: 'egress', allowOut: ['bad..example.com'] }), (e: unknown) => code('INVALID_ARGUMENT')(e) && /domain name/.test((e as Error).message));
      const none = await node.setNetwork(id, { mode: 'none' });
      assert.equal(none.network, undefined);
      assert.equal((await run(node, id, 'ls /sys/class/net')).stdout, 'lo\n');
    });

    test('setCredentials: the sandbox trusts its CA (the certificate only, never a key), credentials replace and clear, unknown ids are NOT_FOUND', async () => {
      const cred = { grantId: 'grt-0000000000000001', secret: 'TOKEN', hosts: ['api.example.test'], headerName: 'Authorization', headerValue: 'Bearer conformance-v4lue' };
      await node.setCredentials(id, [cred]);
      const bundle = (await readAll((await node.readFile(id, '/etc/ssl/certs/ca-certificates.crt')).chunks)).toString();
      const own = (await readAll((await node.readFile(id, '/usr/local/share/ca-certificates/forkd-sandbox-ca.crt')).chunks)).toString();
      assert.match(own, /^-----BEGIN CERTIFICATE-----/);
      assert.ok(bundle.includes(own.trim()), 'the CA is in the bundle curl and OpenSSL read');
      assert.ok(!bundle.includes('PRIVATE KEY') && !own.includes('PRIVATE KEY'));
      // Again (a restart's push, a second grant): the bundle does not grow.
      await node.setCredentials(id, [cred, { ...cred, grantId: 'grt-0000000000000002' }]);
      assert.equal((await readAll((await node.readFile(id, '/etc/ssl/certs/ca-certificates.crt')).chunks)).toString(), bundle);
      // Split in the command (the shell joins it): a command holding the value whole would put it in the sandbox itself.
      const grep = await run(node, id, "grep -rl conformance-v4''lue / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; env | grep -c conformance-v4''lue || true");
      assert.equal(grep.stdout, '0\n', 'the value is nowhere in the sandbox');
      await node.setCredentials(id, []);
      await assert.rejects(node.setCredentials('sbx-000000000000', [cred]), code('NOT_FOUND'));
    });

    test('exportSnapshot and importSnapshot: a paused sandbox leaves through the blob store and comes back under its id', async () => {
      const moved = (await node.create({ template: 'base', memoryMb: 256, env: { KEPT: 'env' } })).id;
      made.push(moved);
      await run(node, moved, 'echo moved > /root/moved.txt');
      await node.pause(moved);
      const snap = (await node.timeline(moved)).at(-1)!;
      const ex = await node.exportSnapshot(snap.id);
      assert.equal(ex.manifest, `snapshots/${snap.id}/manifest.json`);
      assert.ok(ex.bytesUploaded > 0);
      await assert.rejects(node.importSnapshot(ex.manifest, { asSandbox: true }), code('ALREADY_EXISTS'));
      await node.delete(moved);
      const back = SnapshotInfo.parse(await node.importSnapshot(ex.manifest, { asSandbox: true }));
      assert.deepEqual([back.id, back.sandboxId], [snap.id, moved]);
      assert.equal((await node.get(moved)).state, 'paused');
      assert.equal((await node.resume(moved)).state, 'running');
      assert.equal((await run(node, moved, 'cat /root/moved.txt; echo $KEPT')).stdout, 'moved\nenv\n');
      await assert.rejects(node.importSnapshot('snapshots/snap-000000000000/manifest.json'), code('NOT_FOUND'));
      await assert.rejects(node.exportSnapshot('snap-000000000000'), code('NOT_FOUND'));
      await node.delete(moved);
    });

    test('exportTemplate and importTemplate: unknown names and manifests are NOT_FOUND, base is every node\'s own', async () => {
      await assert.rejects(node.exportTemplate('no-such-template'), code('NOT_FOUND'));
      await assert.rejects(node.exportTemplate('base'), code('FAILED_PRECONDITION'));
      await assert.rejects(node.importTemplate('templates/none/00000000-0000-0000-0000-000000000000/template.json'), code('NOT_FOUND'));
    });

    test('node-wide stats', async () => {
      const st = await node.stats();
      assert.ok(st.poolSizeBytes > 0 && st.poolUsedBytes > 0 && st.snapshots >= 1);
    });

    test('delete: the sandbox is gone (NOT_FOUND)', async () => {
      await node.delete(id);
      await assert.rejects(node.get(id), code('NOT_FOUND'));
      assert.ok(!(await node.list()).some((s) => s.id === id));
    });
  });
}
