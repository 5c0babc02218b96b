import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient, ForkdError } from '@forkd/sdk';
import { disposeNodeDir, isRoot, startDaemonProcess, stopDaemonProcess, testConfig, waitFor, type DaemonProcess } from '@forkd/server/testing';

describe('SDK against a real daemon', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let forkd: ForkdClient;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-sdk-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_WARM_POOL: '1' });
    forkd = new ForkdClient({ url: daemon.url, apiKey: daemon.apiKey });
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('exec, streaming callbacks, stdin and typed errors', async () => {
    await using sbx = await forkd.sandboxes.create({ memoryMb: 256 });
    const chunks: string[] = [];
    const r = await sbx.exec(['python3', '-c', 'print(6*7)'], { onStdout: (c) => void chunks.push(new TextDecoder().decode(c)) });
    assert.equal(r.exitCode, 0);
    assert.equal(chunks.join(''), '42\n');
    const cat = await sbx.exec(['cat'], { stdin: 'round trip' });
    assert.equal(cat.stdout, 'round trip');
    await assert.rejects(sbx.exec(['/nope']), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    await assert.rejects(forkd.sandboxes.get('sbx-000000000000'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  });

  test('background process: stdin route, re-attach, signal', async () => {
    await using sbx = await forkd.sandboxes.create({});
    const { pid } = await sbx.spawnBackground(['bash', '-c', 'while read l; do echo "got $l"; done'], { tag: 'reader', openStdin: true });
    await sbx.writeStdin(pid, 'one\n');
    await sbx.writeStdin('tag:reader', 'two\n');
    let out = '';
    const exit = sbx.attach(pid, { onStdout: (c) => void (out += new TextDecoder().decode(c)) });
    await waitFor(() => out.includes('got one\ngot two\n'), 5000, 'replayed output');
    await sbx.writeStdin(pid, undefined, true);
    assert.equal((await exit)?.exitCode, 0);
  });

  test('PTY over WebSocket', async () => {
    await using sbx = await forkd.sandboxes.create({});
    const pty = await sbx.pty({ cols: 100, rows: 30 });
    let screen = '';
    pty.onData((c) => void (screen += new TextDecoder().decode(c)));
    await pty.write('tput cols; echo $((6*7))\n');
    await waitFor(() => /[\r\n]100\r?\n/.test(screen) && /[\r\n]42\r?\n/.test(screen), 5000, 'pty output');
    pty.resize(60, 20);
    await pty.write('tput cols\n');
    await waitFor(() => /[\r\n]60\r?\n/.test(screen), 5000, 'resized');
    await pty.write('exit 4\n');
    assert.equal((await pty.exit)?.exitCode, 4);
  });

  test('files: 100 MB upload and download, list, watch', async () => {
    await using sbx = await forkd.sandboxes.create({});
    const data = randomBytes(100 * 1024 * 1024);
    const up = await sbx.files.write('/tmp/big.bin', data);
    assert.equal(up.size, data.length);
    const got = await sbx.files.read('/tmp/big.bin');
    assert.equal(createHash('sha256').update(got).digest('hex'), createHash('sha256').update(data).digest('hex'));
    await sbx.files.mkdir('/data/x');
    const events: string[] = [];
    const w = await sbx.files.watch('/data', (e) => void events.push(`${e.type}:${e.name}`));
    await sbx.files.write('/data/hello.txt', 'hi');
    await waitFor(() => events.includes('create:hello.txt'), 5000, 'watch event');
    w.close();
    const list = await sbx.files.list('/data', { depth: 2 });
    assert.deepEqual(list.map((e) => e.path).sort(), ['/data/hello.txt', '/data/x']);
    await assert.rejects(sbx.files.read('/data/missing'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  });

  test('snapshot, fork, rewind, pause/resume with two tenants, and a server restart in the middle', async () => {
    const aliceKey = (await forkd.keys.create({ tenant: 'alice' })).key;
    const alice = new ForkdClient({ url: daemon!.url, apiKey: aliceKey });
    const bobKey = (await forkd.keys.create({ tenant: 'bob', format: 'e2b' })).key;
    const bob = new ForkdClient({ url: daemon!.url, apiKey: bobKey });
    const a = await alice.sandboxes.create({ metadata: { owner: 'alice' } });
    await a.exec(['bash', '-c', 'echo one > /tmp/f']);
    const snap = await a.snapshot({ name: 'one' });
    await a.exec(['bash', '-c', 'echo two > /tmp/f']);
    const [child] = await a.fork();
    assert.equal((await child!.exec(['cat', '/tmp/f'])).stdout, 'two\n');
    await a.rewind(snap);
    assert.equal((await a.exec(['cat', '/tmp/f'])).stdout, 'one\n');
    // Bob sees nothing of Alice's, whatever the route.
    assert.deepEqual(await bob.sandboxes.list(), []);
    await assert.rejects(bob.sandboxes.get(a.id), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    await assert.rejects(bob.snapshots.get(snap.id), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    await assert.rejects(bob.snapshots.fork(snap.id), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    await assert.rejects(bob.keys.create({}), (e: unknown) => e instanceof ForkdError && e.code === 'PERMISSION_DENIED');
    // Forks carry their parent's metadata.
    assert.deepEqual((await alice.sandboxes.list({ metadata: { owner: 'alice' } })).map((s) => s.id).sort(), [a.id, child!.id].sort());
    assert.deepEqual(await alice.sandboxes.list({ metadata: { owner: 'bob' } }), []);
    await a.pause();
    const auditBefore = (await alice.audit.list({ sandbox: a.id })).length;
    assert.ok(auditBefore >= 6);

    // Restart: nothing the tenants had is lost, keys and audit records included.
    await stopDaemonProcess(daemon, 'SIGTERM');
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_WARM_POOL: '1' });
    forkd = new ForkdClient({ url: daemon.url, apiKey: daemon.apiKey });
    const aliceAgain = new ForkdClient({ url: daemon.url, apiKey: aliceKey });
    const b = await aliceAgain.sandboxes.get(a.id);
    assert.equal(b.info.state, 'paused');
    await b.resume();
    assert.equal((await b.exec(['cat', '/tmp/f'])).stdout, 'one\n');
    assert.ok((await aliceAgain.audit.list({ sandbox: a.id })).length > auditBefore, 'audit records survive the restart');
    assert.deepEqual(await new ForkdClient({ url: daemon.url, apiKey: bobKey }).sandboxes.list(), [], 'keys survive too');
    await b.delete();
    await (await aliceAgain.sandboxes.get(child!.id)).delete();
  });
});
