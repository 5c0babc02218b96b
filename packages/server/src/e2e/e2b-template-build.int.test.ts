import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { randomBytes } from 'node:crypto';
import { Sandbox, Template, waitForFile, type LogEntry } from 'e2b';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { startE2bDaemon } from '../testing/e2b-daemon.js';

/**
 * E2B's template builder through the official `e2b` SDK, unchanged, against
 * a real `forkd serve`: a builder program (files copied from a context,
 * RUN as two users, env, workdir, a start command with its ready check)
 * becomes a template `Sandbox.create` starts; a rebuild comes from the step
 * cache; tags name builds; a failing step fails the build naming it.
 */
describe("E2B's template builder (Template.build) against forkd serve", { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let ctx = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  let opts: { apiKey: string; apiUrl: string };
  const alias = `tb-${randomBytes(3).toString('hex')}`;
  const program = () =>
    Template({ fileContextPath: ctx })
      .fromBaseImage()
      .copy('folder/*', 'folder')
      .runCmd('cat folder/test.txt > folder/seen.txt')
      .setEnvs({ GREETING: "it's $HOME \\ \"quoted\"" })
      .runCmd('id -un > /tmp/who-root.txt', { user: 'root' })
      .runCmd('id -un > /tmp/who-after.txt')
      .setWorkdir('/app')
      .setStartCmd("sh -c 'echo up > /tmp/up; exec sleep infinity'", waitForFile('/tmp/up'));

  /** Template.build, with the build's message and log in what a failure says (the SDK's error carries the program's stack only). */
  async function build(t: ReturnType<typeof program>, name: string, extra: Record<string, unknown> = {}, logs: string[] = []) {
    try {
      return await Template.build(t, name, { ...opts, ...extra, onBuildLogs: (l: LogEntry) => void logs.push(l.message) });
    } catch (err) {
      throw new Error(`${(err as Error).name}: ${(err as Error).message}\n--- build log:\n${logs.join('\n')}`, { cause: err });
    }
  }

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-e2b-tb-'));
    cfg = testConfig(dir);
    const e = await startE2bDaemon(cfg.env, 'tb-tenant');
    daemon = e.daemon;
    process.env.E2B_API_KEY = e.key;
    process.env.E2B_API_URL = e.apiUrl;
    process.env.E2B_SANDBOX_URL = e.envdUrl;
    delete process.env.E2B_DEBUG;
    opts = { apiKey: e.key, apiUrl: e.apiUrl };
    ctx = join(dir, 'context');
    await mkdir(join(ctx, 'folder'), { recursive: true });
    await writeFile(join(ctx, 'folder/test.txt'), 'This is a test file.');
    await symlink('test.txt', join(ctx, 'folder/symlink.txt'));
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('Template.build of a builder program, then Sandbox.create from it: files, users, env, workdir, start command warm', async () => {
    const logs: string[] = [];
    const info = await build(program(), alias, {}, logs);
    assert.equal(info.templateId, alias);
    assert.match(info.buildId, /^[0-9a-f-]{36}$/);
    assert.ok(logs.some((l) => /Step \d+\/\d+ : RUN cat folder\/test.txt/.test(l)), logs.join('\n'));
    const s = await Sandbox.create(alias, { timeoutMs: 120_000 });
    try {
      assert.equal(await s.files.read('/home/user/folder/seen.txt'), 'This is a test file.');
      assert.equal((await s.commands.run('readlink /home/user/folder/symlink.txt')).stdout.trim(), 'test.txt');
      assert.equal((await s.commands.run('stat -c %U /home/user/folder/test.txt')).stdout.trim(), 'user', "copied files are the builder's current user's");
      assert.equal((await s.commands.run('cat /tmp/who-root.txt /tmp/who-after.txt')).stdout, 'root\nuser\n');
      assert.equal((await s.commands.run('printf %s "$GREETING"')).stdout, "it's $HOME \\ \"quoted\"");
      assert.equal((await s.commands.run('test -d /app && cat /tmp/up')).stdout.trim(), 'up');
      assert.ok((await s.commands.list()).some((p) => p.cmd.includes('sleep') || p.args.join(' ').includes('sleep infinity')), 'the start command is running');
    } finally {
      await s.kill();
    }
    assert.equal(await Template.exists(alias, opts), true);
    assert.equal(await Template.exists(`nonexistent-${randomBytes(4).toString('hex')}`, opts), false);
  });

  test('the same program again comes from the step cache; skipCache runs every step again', async () => {
    const logs: string[] = [];
    const t0 = performance.now();
    await build(program(), alias, {}, logs);
    const cachedMs = performance.now() - t0;
    assert.ok(logs.filter((l) => l.includes('CACHED')).length >= 4, logs.join('\n'));
    assert.ok(!logs.some((l) => / ---> done in/.test(l)), `no step ran:\n${logs.join('\n')}`);
    assert.ok(cachedMs < 5000, `a cached build took ${cachedMs} ms`);
    const forced: string[] = [];
    await Template.build(Template().fromTemplate('base').runCmd('echo forced'), `${alias}-f`, { ...opts, skipCache: true, onBuildLogs: (l: LogEntry) => void forced.push(l.message) });
    await Template.build(Template().fromTemplate('base').runCmd('echo forced'), `${alias}-f`, { ...opts, skipCache: true, onBuildLogs: (l: LogEntry) => void forced.push(l.message) });
    assert.equal(forced.filter((l) => /RUN echo forced/.test(l) && l.startsWith('Step')).length, 2);
    assert.ok(!forced.some((l) => l.includes('CACHED') && l.includes('echo forced')));
  });

  test('tags: alias:tag builds its own template; assignTags copies it under more tags; getTags lists; removeTags deletes', async () => {
    const v1 = `${alias}:v1`;
    // v1 is warm (its start command running), so the tags copied from it carry its memory images too.
    const b = await Template.build(Template().fromTemplate('base').runCmd('echo one > /tmp/version').setStartCmd("sh -c 'echo up > /tmp/up; exec sleep 7777'", waitForFile('/tmp/up')), v1, opts);
    await Template.build(Template().fromTemplate('base').runCmd('echo two > /tmp/version'), alias, opts);
    const tagged = await Template.assignTags(v1, ['prod', 'stable'], opts);
    assert.equal(tagged.buildId, b.buildId);
    assert.deepEqual([...tagged.tags].sort(), ['prod', 'stable']);
    const tags = await Template.getTags(alias, opts);
    assert.deepEqual(tags.map((t) => t.tag).sort(), ['default', 'prod', 'stable', 'v1']);
    assert.equal(tags.find((t) => t.tag === 'prod')?.buildId, b.buildId);
    for (const [name, want] of [[`${alias}:prod`, 'one'], [alias, 'two'], [`${alias}:default`, 'two']] as const) {
      const s = await Sandbox.create(name, { timeoutMs: 60_000 });
      try {
        assert.equal((await s.files.read('/tmp/version')).trim(), want, name);
        const started = await s.commands.run('pgrep -f "^sleep 7777" || true');
        assert.equal(started.stdout.trim() !== '', want === 'one', `${name}: the start command ${want === 'one' ? 'runs, restored from the copied images' : 'is not there'}`);
      } finally {
        await s.kill();
      }
    }
    await assert.rejects(Template.assignTags(v1, ':invalid-tag', opts));
    await assert.rejects(Template.assignTags(v1, `${alias}:`, opts));
    await Template.removeTags(alias, 'prod', opts);
    assert.equal(await Template.exists(`${alias}:prod`, opts), false);
    await assert.rejects(Sandbox.create(`${alias}:prod`, { timeoutMs: 60_000 }));
    await assert.rejects(Template.removeTags(`nonexistent-${randomBytes(4).toString('hex')}`, 'x', opts));
    await assert.rejects(Template.getTags(`nonexistent-${randomBytes(4).toString('hex')}`, opts));
  });

  test('a failing step fails the build with its message and E2B step; the log has its output', async () => {
    const logs: string[] = [];
    await assert.rejects(
      Template.build(Template().fromTemplate('base').runCmd('echo fine').runCmd('echo about-to-fail; exit 3'), `${alias}-bad`, { ...opts, onBuildLogs: (l: LogEntry) => void logs.push(l.message) }),
      (err: Error) => err.name === 'BuildError' && /exit 3/.test(err.message),
    );
    assert.ok(logs.includes('about-to-fail'), logs.join('\n'));
    await assert.rejects(Template.build(Template().fromTemplate(`nonexistent-${randomBytes(3).toString('hex')}`), `${alias}-bad2`, opts), (err: Error) => /not found/.test(err.message));
  });

  test('as an attacker: a forged upload URL is refused; another tenant sees neither the build nor its files', async () => {
    const hash = 'b'.repeat(64);
    const link = (await (await fetch(`${opts.apiUrl}/templates/${alias}/files/${hash}`, { headers: { 'x-api-key': opts.apiKey } })).json()) as { present: boolean; url: string };
    assert.equal(link.present, false);
    const forged = new URL(link.url);
    forged.searchParams.set('tenant', 'someone-else');
    assert.equal((await fetch(forged, { method: 'PUT', body: 'x' })).status, 401);
    const expired = new URL(link.url);
    expired.searchParams.set('expires', '1');
    assert.equal((await fetch(expired, { method: 'PUT', body: 'x' })).status, 401);
    assert.equal((await fetch(link.url, { method: 'PUT', body: 'x' })).status, 200);
    const r = await fetch(`${daemon!.url}/v1/keys`, { method: 'POST', headers: { authorization: `Bearer ${daemon!.apiKey}`, 'content-type': 'application/json' }, body: JSON.stringify({ format: 'e2b', tenant: 'tb-other' }) });
    const other = ((await r.json()) as { key: string }).key;
    const theirs = (await (await fetch(`${opts.apiUrl}/templates/${alias}/files/${hash}`, { headers: { 'x-api-key': other } })).json()) as { present: boolean };
    assert.equal(theirs.present, false, "another tenant's upload is not present for this one");
    const req = await fetch(`${opts.apiUrl}/v3/templates`, { method: 'POST', headers: { 'x-api-key': opts.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ name: `${alias}-x` }) });
    const { buildID } = (await req.json()) as { buildID: string };
    assert.equal((await fetch(`${opts.apiUrl}/templates/${alias}-x/builds/${buildID}/status`, { headers: { 'x-api-key': other } })).status, 404);
    assert.equal((await fetch(`${opts.apiUrl}/v3/templates`, { method: 'POST', headers: { 'x-api-key': other, 'content-type': 'application/json' }, body: JSON.stringify({ name: alias }) })).status, 409, "another tenant's alias is taken");
    // A tenant cannot pile up builds: 20 requested or running at once (this one's `-x` is one of them).
    const request = (name: string) => fetch(`${opts.apiUrl}/v3/templates`, { method: 'POST', headers: { 'x-api-key': opts.apiKey, 'content-type': 'application/json' }, body: JSON.stringify({ name }) });
    for (let i = 1; i < 20; i++) assert.equal((await request(`${alias}-pile${i}`)).status, 202);
    const refused = await request(`${alias}-pile20`);
    assert.equal(refused.status, 429, await refused.text());
  });
});
