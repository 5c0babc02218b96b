import { randomBytes } from 'node:crypto';
import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { describeE2b, sleep, type E2bRun } from '../testing/e2b-suite.js';

/**
 * The sandbox plane through the official `e2b` SDK (2.51.0 and 2.35.0)
 * against a real `forkd serve`: commands, PTY, files, envd's wire and kill.
 * The lifecycle (list, timeouts, pause, snapshots, fork) is in
 * e2b-lifecycle.int.test.ts.
 */
describeE2b('the official e2b SDK against forkd serve: commands, PTY, files, wire', (run: E2bRun, versionName: string) => {
  const version = { name: versionName };
  // Filled in before the tests run (see describeE2b).
  let Sandbox: E2bRun['Sandbox'];
  let sbx: E2bRun['sbx'];
  let daemon: E2bRun['daemon'] | undefined;
  const tag = run.tag;
  before(() => {
    ({ Sandbox, sbx, daemon } = run);
  });

    test('create with envs and metadata; commands see the envs', async () => {
      assert.equal(await sbx.isRunning(), true);
      const r = await sbx.commands.run('echo $FOO; whoami; pwd');
      assert.equal(r.stdout, 'bar\nuser\n/home/user\n');
      assert.equal(r.exitCode, 0);
      const info = await sbx.getInfo();
      assert.equal(info.sandboxId, sbx.sandboxId);
      assert.deepEqual(info.metadata, { suite: tag });
      // E2B's base: python next to python3, passwordless sudo for `user`.
      assert.match((await sbx.commands.run('python --version')).stdout, /^Python 3\./);
      assert.equal((await sbx.commands.run('sudo -n whoami; id -gn')).stdout, 'root\nuser\n');
    });

    test('commands: foreground and background with streaming callbacks, exit codes', async () => {
      const out: string[] = [];
      const err: string[] = [];
      const r = await sbx.commands.run('echo "a  b"; echo oops >&2; printf "multi\nline\n"', { onStdout: (d) => void out.push(d), onStderr: (d) => void err.push(d) });
      assert.equal(r.stdout, 'a  b\nmulti\nline\n');
      assert.equal(r.stderr, 'oops\n');
      assert.equal(out.join(''), r.stdout);
      assert.equal(err.join(''), 'oops\n');
      await assert.rejects(sbx.commands.run('exit 3'), (e: Error & { exitCode?: number }) => e.exitCode === 3);
      const bg: string[] = [];
      const h = await sbx.commands.run('for i in 1 2 3; do echo $i; sleep 0.1; done', { background: true, onStdout: (d) => void bg.push(d) });
      assert.ok(h.pid > 0);
      const done = await h.wait();
      assert.equal(done.stdout, '1\n2\n3\n');
      assert.equal(bg.join(''), '1\n2\n3\n');
      const scoped = await sbx.commands.run('echo $ONLY', { envs: { ONLY: 'here' } });
      assert.equal(scoped.stdout, 'here\n');
      assert.equal((await sbx.commands.run('echo "[$ONLY]"')).stdout, '[]\n');
      assert.equal((await sbx.commands.run('pwd', { cwd: '/tmp' })).stdout, '/tmp\n');
      assert.equal((await sbx.commands.run('whoami', { user: 'root' })).stdout, 'root\n');
      await assert.rejects(sbx.commands.run('sleep 10', { timeoutMs: 1000 }));
    });

    test('commands: stdin, closeStdin, kill, list, connect', async () => {
      const cat = await sbx.commands.run('cat', { background: true, stdin: true });
      await sbx.commands.sendStdin(cat.pid, 'hello ');
      await sbx.commands.sendStdin(cat.pid, '');
      await cat.sendStdin('world\n');
      await cat.closeStdin();
      const r = await cat.wait();
      assert.equal(r.stdout, 'hello world\n');
      assert.equal(r.exitCode, 0);

      const s1 = await sbx.commands.run('sleep 30', { background: true });
      const s2 = await sbx.commands.run('sleep 30', { background: true });
      const pids = (await sbx.commands.list()).map((p) => p.pid);
      assert.ok(pids.includes(s1.pid) && pids.includes(s2.pid), JSON.stringify(pids));
      assert.equal(await sbx.commands.kill(s1.pid), true);
      await assert.rejects(sbx.commands.run(`kill -0 ${s1.pid}`));
      assert.equal(await sbx.commands.kill(999999), false);
      await assert.rejects(s1.wait());

      const ticker = await sbx.commands.run('sleep 0.5; for i in 1 2 3; do echo tick$i; sleep 0.2; done', { background: true });
      await ticker.disconnect();
      const seen: string[] = [];
      const again = await sbx.commands.connect(ticker.pid, { onStdout: (d) => void seen.push(d) });
      const res = await again.wait();
      assert.match(seen.join(''), /tick3/);
      assert.equal(res.exitCode, 0);
      await assert.rejects(sbx.commands.connect(999999));
      await s2.kill();
    });

    test('pty: create, sendInput, resize, kill', async () => {
      let data = '';
      const dec = new TextDecoder();
      const pty = await sbx.pty.create({ cols: 80, rows: 24, envs: { ABC: '123' }, onData: (d) => void (data += dec.decode(d)) });
      await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('tput cols\n'));
      for (let i = 0; i < 100 && !/\b80\b/.test(data); i++) await sleep(50);
      assert.match(data, /\b80\b/);
      await sbx.pty.resize(pty.pid, { cols: 100, rows: 30 });
      await sbx.pty.sendInput(pty.pid, new TextEncoder().encode('tput cols; echo $ABC\n'));
      // Both lines of that command's output, in order ("100" may come a moment before "123").
      for (let i = 0; i < 100 && !/\b100\r?\n123\b/.test(data); i++) await sleep(50);
      assert.match(data, /\b100\r?\n123\b/);
      assert.equal(await sbx.pty.kill(pty.pid), true);
      await assert.rejects(pty.wait());
      assert.equal(await sbx.pty.kill(999999), false);

      const p2 = await sbx.pty.create({ cols: 80, rows: 24, onData: () => {} });
      await sbx.pty.sendInput(p2.pid, new TextEncoder().encode('exit\n'));
      assert.equal((await p2.wait()).exitCode, 0);
    });

    test('files: write/read text and 3 MB binary, list, exists, rename, remove, makeDir, getInfo', async () => {
      const w = await sbx.files.write('notes/hello.txt', 'hello world');
      assert.equal(w.path, '/home/user/notes/hello.txt');
      assert.equal(w.name, 'hello.txt');
      assert.equal(await sbx.files.read('notes/hello.txt'), 'hello world');
      assert.equal((await sbx.commands.run('cat ~/notes/hello.txt; echo; stat -c %U:%G:%a ~/notes/hello.txt')).stdout, 'hello world\nuser:user:644\n');
      const bin = randomBytes(3 * 1024 * 1024);
      await sbx.files.write('/tmp/blob.bin', bin.buffer.slice(bin.byteOffset, bin.byteOffset + bin.length) as ArrayBuffer);
      const back = await sbx.files.read('/tmp/blob.bin', { format: 'bytes' });
      assert.equal(Buffer.from(back).equals(bin), true);
      assert.equal(await sbx.files.read('/tmp/empty-not-there').catch((e: Error) => e.name), 'FileNotFoundError');
      await sbx.files.write('/tmp/empty.txt', '');
      assert.equal(await sbx.files.read('/tmp/empty.txt'), '');
      const multi = await sbx.files.write([
        { path: 'm/a.txt', data: 'A' },
        { path: '/tmp/m/b.txt', data: 'B' },
      ]);
      assert.deepEqual(multi.map((e) => e.path), ['/home/user/m/a.txt', '/tmp/m/b.txt']);

      assert.equal(await sbx.files.makeDir('tree/sub1/sub1_1'), true);
      assert.equal(await sbx.files.makeDir('tree/sub1'), false);
      await sbx.files.makeDir('tree/sub2');
      await sbx.files.write('tree/file1.txt', 'x');
      const flat = await sbx.files.list('tree');
      assert.deepEqual(flat.map((e) => e.name), ['file1.txt', 'sub1', 'sub2']);
      assert.deepEqual(flat.map((e) => e.type), ['file', 'dir', 'dir']);
      const deep = await sbx.files.list('tree', { depth: 2 });
      assert.deepEqual(deep.map((e) => e.path.replace('/home/user/tree/', '')), ['file1.txt', 'sub1', 'sub1/sub1_1', 'sub2']);

      assert.equal(await sbx.files.exists('tree/file1.txt'), true);
      assert.equal(await sbx.files.exists('tree/nope.txt'), false);
      const info = await sbx.files.getInfo('tree/file1.txt');
      assert.equal(info.name, 'file1.txt');
      assert.equal(info.type, 'file');
      assert.equal(info.path, '/home/user/tree/file1.txt');
      assert.equal(info.size, 1);
      assert.equal(info.mode, 0o644);
      assert.equal(info.permissions, '-rw-r--r--');
      assert.equal(info.owner, 'user');
      assert.ok(info.modifiedTime instanceof Date && !Number.isNaN(info.modifiedTime.getTime()));
      await assert.rejects(sbx.files.getInfo('tree/nope.txt'), (e: Error) => e.name === 'FileNotFoundError');

      const moved = await sbx.files.rename('tree/file1.txt', 'tree/renamed/file2.txt');
      assert.equal(moved.path, '/home/user/tree/renamed/file2.txt');
      assert.equal(await sbx.files.read('tree/renamed/file2.txt'), 'x');
      assert.equal(await sbx.files.exists('tree/file1.txt'), false);
      await sbx.files.remove('tree');
      assert.equal(await sbx.files.exists('tree'), false);
      await sbx.files.remove('tree');
    });

    test('files: metadata (X-Metadata-* as user.e2b.* xattrs), multipart and octet-stream, stat, list, rename, overwrite; a directory has a size', async () => {
      const metadata = { author: 'mish', purpose: 'upload' };
      const w = await sbx.files.write('meta/a.txt', 'with metadata', { metadata });
      assert.deepEqual(w.metadata, metadata);
      assert.deepEqual((await sbx.files.getInfo('meta/a.txt')).metadata, metadata);
      const raw = await sbx.files.write('meta/raw.txt', 'octets', { metadata, useOctetStream: true });
      assert.deepEqual(raw.metadata, metadata);
      const many = await sbx.files.writeFiles([{ path: 'meta/m1.txt', data: '1' }, { path: 'meta/m2.txt', data: '2' }], { metadata: { source: 'suite' } });
      assert.deepEqual(many.map((i) => i.metadata), [{ source: 'suite' }, { source: 'suite' }]);
      assert.deepEqual((await sbx.files.list('meta')).find((e) => e.name === 'm2.txt')?.metadata, { source: 'suite' });
      assert.deepEqual((await sbx.files.rename('meta/a.txt', 'meta/b.txt')).metadata, metadata);
      // envd replaces a file's metadata on every upload: none clears it.
      assert.equal((await sbx.files.write('meta/b.txt', 'again')).metadata, undefined);
      assert.equal((await sbx.files.getInfo('meta/b.txt')).metadata, undefined);
      // Set inside the sandbox under envd's namespace: shown; forkd's own keys are not E2B's.
      const path = (await sbx.commands.run('realpath meta/raw.txt')).stdout.trim();
      await sbx.commands.run(`python3 -c "import os; os.setxattr('${path}', 'user.e2b.extra', b'x'); os.setxattr('${path}', 'user.other', b'y')"`);
      assert.deepEqual((await sbx.files.getInfo('meta/raw.txt')).metadata, { ...metadata, extra: 'x' });
      await assert.rejects(sbx.files.write('meta/bad.txt', 'x', { metadata: { 'bad key': 'v' } }), (e: Error) => e.name === 'InvalidArgumentError');
      assert.equal(await sbx.files.exists('meta/bad.txt'), false);
      // A raw request the SDK would have refused: the server refuses it too, before writing.
      const up = await sbx.uploadUrl('meta/bad.txt', { useSignatureExpiration: 10_000 });
      const r = await fetch(up, { method: 'POST', headers: { 'content-type': 'application/octet-stream', 'x-metadata-k': 'v'.repeat(5000) }, body: 'x' });
      assert.equal(r.status, 400);
      assert.equal(await sbx.files.exists('meta/bad.txt'), false);
      await sbx.files.makeDir('meta/empty');
      assert.ok((await sbx.files.getInfo('meta/empty')).size > 0, 'an empty directory reports a size, as on ext4');
      await sbx.files.remove('meta');
    });

    test('files: watchDir, uploadUrl, downloadUrl', async () => {
      await sbx.files.makeDir('watched');
      const events: { name: string; type: string }[] = [];
      const handle = await sbx.files.watchDir('watched', (e) => void events.push({ name: e.name, type: String(e.type) }), { recursive: true });
      await sbx.files.write('watched/w.txt', 'one');
      await sbx.files.makeDir('watched/nested');
      await sleep(200);
      await sbx.files.write('watched/nested/n.txt', 'two');
      for (let i = 0; i < 100 && !events.some((e) => e.name === 'nested/n.txt'); i++) await sleep(50);
      await handle.stop();
      assert.ok(events.some((e) => e.name === 'w.txt' && e.type === 'write'), JSON.stringify(events));
      assert.ok(events.some((e) => e.name === 'nested' && e.type === 'create'), JSON.stringify(events));
      assert.ok(events.some((e) => e.name === 'nested/n.txt'), JSON.stringify(events));
      await assert.rejects(sbx.files.watchDir('watched/w.txt', () => {}));

      const up = await sbx.uploadUrl('signed.txt', { useSignatureExpiration: 10_000 });
      const form = new FormData();
      form.append('file', new Blob(['signed hello']), 'blob');
      const ur = await fetch(up, { method: 'POST', body: form });
      assert.equal(ur.status, 200);
      assert.deepEqual(await ur.json(), [{ name: 'signed.txt', type: 'file', path: '/home/user/signed.txt' }]);
      const down = await sbx.downloadUrl('signed.txt');
      const dr = await fetch(down);
      assert.equal(dr.status, 200);
      assert.equal(await dr.text(), 'signed hello');
      const expired = await fetch(await sbx.downloadUrl('signed.txt', { useSignatureExpiration: -10_000 }));
      assert.equal(expired.status, 401);
      assert.deepEqual(await expired.json(), { code: 401, message: 'signature is already expired' });
      const asRoot = await fetch(await sbx.downloadUrl('/home/user/signed.txt', { user: 'root' }));
      assert.equal(await asRoot.text(), 'signed hello');
      const bad = await fetch(down.replace(/signature=[^&]+/, 'signature=v1_nope'));
      assert.equal(bad.status, 502);
    });

    test('kill while a command streams: the SDK reports the sandbox was killed', async () => {
      const s = await Sandbox.create('base', { timeoutMs: 120_000 });
      // Settled into a value at once: the rejection comes while the kill is awaited.
      const outcome = s.commands.run('sleep 60').then(
        () => undefined,
        (e: Error) => e,
      );
      await sleep(500);
      await Sandbox.kill(s.sandboxId);
      const err = await outcome;
      assert.equal(err?.name, 'TimeoutError');
      assert.match(err.message, /killed or reached its end of life/);
      assert.equal(await s.isRunning(), false);
      await assert.rejects(Sandbox.connect(s.sandboxId));
    });

    test('wire: 502 body for unknown sandboxes, 401 without the token, every call audited', async () => {
      const envd = process.env.E2B_SANDBOX_URL!;
      const r = await fetch(`${envd}/health`, { headers: { 'e2b-sandbox-id': 'sbx-000000000000' } });
      assert.equal(r.status, 502);
      assert.deepEqual(await r.json(), { sandboxId: 'sbx-000000000000', message: 'The sandbox was not found', code: 502 });
      const u = await fetch(`${envd}/process.Process/List`, { method: 'POST', headers: { 'e2b-sandbox-id': sbx.sandboxId, 'content-type': 'application/json' }, body: '{}' });
      assert.equal(u.status, 401);
      assert.deepEqual(await u.json(), { code: 401, message: 'unauthorized access, please provide a valid access token or method signing if supported' });
      const api = process.env.E2B_API_URL!;
      const noKey = await fetch(`${api}/v2/sandboxes`);
      assert.equal(noKey.status, 401);
      assert.equal(((await noKey.json()) as { code: number }).code, 401);
      const gone = await fetch(`${api}/sandboxes/nonexisting`, { headers: { 'x-api-key': process.env.E2B_API_KEY! } });
      assert.equal(gone.status, 404);
      assert.equal(((await gone.json()) as { code: number }).code, 404);
      if (version.name === 'e2b 2.51.0') {
        const { Template } = await import('e2b');
        assert.equal(await Template.exists('base'), true);
        assert.equal(await Template.exists('no-such-template'), false);
      }
      const audit = await fetch(`${daemon!.url}/v1/audit?sandbox=${sbx.sandboxId}`, { headers: { authorization: `Bearer ${daemon!.apiKey}` } });
      const ops = ((await audit.json()) as { records: { operation: string; tenant?: string }[] }).records;
      assert.ok(ops.some((o) => /^E2B POST \/(v2\/)?sandboxes$/.test(o.operation) && o.tenant === 'e2b-test'), JSON.stringify(ops.slice(0, 5)));
      assert.ok(ops.some((o) => o.operation === 'E2B envd POST /process.Process/Start'));
    });

    test('wire: the RPCs the JS SDK does not use (polled watchers, StreamInput)', async () => {
      const envd = process.env.E2B_SANDBOX_URL!;
      const detail = await fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}`, { headers: { 'x-api-key': process.env.E2B_API_KEY! } });
      const token = ((await detail.json()) as { envdAccessToken: string }).envdAccessToken;
      const h = { 'e2b-sandbox-id': sbx.sandboxId, 'x-access-token': token, 'content-type': 'application/json' };
      const rpc = async (path: string, body: unknown) => {
        const r = await fetch(`${envd}/${path}`, { method: 'POST', headers: h, body: JSON.stringify(body) });
        return { status: r.status, body: (await r.json()) as Record<string, unknown> };
      };
      await sbx.files.makeDir('polled');
      const created = await rpc('filesystem.Filesystem/CreateWatcher', { path: 'polled' });
      assert.equal(created.status, 200);
      const watcherId = created.body.watcherId as string;
      assert.match(watcherId, /^w/);
      await sbx.files.write('polled/p.txt', 'x');
      let events: { name: string; type: string }[] = [];
      for (let i = 0; i < 50 && !events.some((e) => e.name === 'p.txt'); i++) {
        await sleep(100);
        events = events.concat(((await rpc('filesystem.Filesystem/GetWatcherEvents', { watcherId })).body.events as typeof events) ?? []);
      }
      assert.ok(events.some((e) => e.name === 'p.txt' && e.type === 'EVENT_TYPE_WRITE'), JSON.stringify(events));
      assert.equal((await rpc('filesystem.Filesystem/RemoveWatcher', { watcherId })).status, 200);
      const gone = await rpc('filesystem.Filesystem/GetWatcherEvents', { watcherId });
      assert.equal(gone.status, 404);
      assert.equal(gone.body.code, 'not_found');

      const cat = await sbx.commands.run('cat', { background: true, stdin: true });
      const frame = (m: unknown) => {
        const p = Buffer.from(JSON.stringify(m));
        const head = Buffer.alloc(5);
        head.writeUInt32BE(p.length, 1);
        return Buffer.concat([head, p]);
      };
      const body = Buffer.concat([frame({ start: { process: { pid: cat.pid } } }), frame({ data: { input: { stdin: Buffer.from('streamed\n').toString('base64') } } }), frame({ keepalive: {} })]);
      const si = await fetch(`${envd}/process.Process/StreamInput`, { method: 'POST', headers: { ...h, 'content-type': 'application/connect+json' }, body });
      assert.equal(si.status, 200);
      const raw = Buffer.from(await si.arrayBuffer());
      assert.equal(raw.readUInt8(raw.length - 7), 2, 'ends with an end-stream envelope');
      assert.equal(raw.subarray(raw.length - 2).toString(), '{}');
      await cat.closeStdin();
      assert.equal((await cat.wait()).stdout, 'streamed\n');
    });

    test('kill, then isRunning() is false and kill again is false', async () => {
      assert.equal(await sbx.kill(), true);
      assert.equal(await sbx.isRunning(), false);
      const s = await Sandbox.create('base', { timeoutMs: 120_000 });
      assert.equal(await s.kill(), true);
      assert.equal(await s.isRunning(), false);
      assert.equal(await Sandbox.kill(s.sandboxId), false);
      await assert.rejects(Sandbox.getInfo(s.sandboxId), (e: Error) => e.name === 'SandboxNotFoundError' || /not found/i.test(e.message));
    });
});
