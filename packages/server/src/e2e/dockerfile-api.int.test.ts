import { chmod, mkdir, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdClient, type BuildStep } from '@forkd/sdk';
import { readBuildContext } from '@forkd/sdk/build-context';
import { exec } from '../shared/exec.js';
import { REPO_ROOT } from '../shared/config.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';

const DOCKERFILE = `FROM template:base
ARG WHO=nobody
ENV GREETING="hello \${WHO}"
WORKDIR /srv
COPY app/ ./
RUN ["/bin/sh", "-c", "cat msg.txt > built.txt"]
CMD ["sleep", "100000"]
`;

/**
 * Dockerfile builds through the whole stack: the SDK over HTTP (its step
 * events), the real CLI (its Step and CACHED lines), and the control plane's
 * checks of a tenant's FROM before anything is built.
 */
describe('Dockerfile builds through the API, SDK and CLI', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let admin: ForkdClient;
  let tenant: ForkdClient;
  let ctx = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-df-api-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_WARM_POOL: '0' });
    admin = new ForkdClient({ url: daemon.url, apiKey: (await readFile(join(cfg.config.stateDir, 'admin.key'), 'utf8')).trim() });
    tenant = new ForkdClient({ url: daemon.url, apiKey: (await admin.keys.create({ tenant: 'acme' })).key });
    ctx = join(dir, 'ctx');
    await mkdir(join(ctx, 'app'), { recursive: true, mode: 0o755 });
    await writeFile(join(ctx, 'app/msg.txt'), 'from the context\n');
    await chmod(join(ctx, 'app/msg.txt'), 0o644);
    await writeFile(join(ctx, 'Dockerfile'), DOCKERFILE);
  });
  after(async () => {
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  test('the SDK builds and gets each step; a sandbox from the template has its files, env and cwd', async () => {
    const { context } = await readBuildContext(ctx);
    const steps: BuildStep[] = [];
    const t = await tenant.templates.build({ name: 'df-sdk', dockerfile: DOCKERFILE, context, buildArgs: { WHO: 'sdk' } }, { onProgress: (_l, s) => void (s && steps.push(s)) });
    assert.equal(t.warm, true);
    assert.deepEqual(
      steps.filter((s) => s.status !== 'start').map((s) => `${s.index}/${s.total} ${s.status}`),
      ['1/7 done', '2/7 done', '3/7 done', '4/7 done', '5/7 done', '6/7 done', '7/7 done'],
    );
    const s = await tenant.sandboxes.create({ template: 'df-sdk' });
    const r = await s.exec(['/bin/sh', '-c', 'pwd; cat built.txt; echo $GREETING']);
    assert.equal(r.stdout, '/srv\nfrom the context\nhello sdk\n');
  });

  test('the CLI shows Step i/N and CACHED; a changed build arg reruns from the ENV it changes', async () => {
    // The CLI remembers build durations under the user's cache: this test's own, not the machine's.
    const env = { ...process.env, FORKD_URL: daemon.url, FORKD_API_KEY: (await admin.keys.create({ tenant: 'acme' })).key, NO_COLOR: '1', XDG_CACHE_HOME: join(dir, 'cache') };
    const cli = (args: string[]) => exec(join(REPO_ROOT, 'forkd'), ['template', 'build', 'df-cli', '--dockerfile', join(ctx, 'Dockerfile'), ...args], { env, timeoutMs: 300_000 });
    const first = await cli(['--build-arg', 'WHO=cli']);
    assert.match(first.stderr, /^Step 1\/7 : FROM template:base$/m, 'a first build has no durations to estimate from');
    const again = await cli(['--build-arg', 'WHO=cli']);
    // The template's last build had as many steps: each step line says the time left, from that build's durations.
    assert.match(again.stderr, /^Step 1\/7 : FROM template:base \(~\d+[smh0-9]* left\)$/m);
    assert.equal(again.stderr.match(/^ ---> CACHED$/gm)?.length, 7, again.stderr);
    assert.match(again.stderr, /template df-cli is up to date/);
    assert.equal(again.stdout, 'df-cli\n');
    const changed = await cli(['--build-arg', 'WHO=other']);
    assert.equal(changed.stderr.match(/^ ---> CACHED$/gm)?.length, 1, `only FROM is cached: ${changed.stderr}`);
  });

  test("a tenant's FROM is checked before the build: internal registries, others' templates, bad Dockerfiles", async () => {
    const build = (dockerfile: string) => tenant.templates.build({ name: 'df-bad', dockerfile });
    await assert.rejects(build('FROM 127.0.0.1:5000/img:1\n'), { code: 'PERMISSION_DENIED' });
    await admin.templates.build({ name: 'df-admins', dockerfile: 'FROM template:base\nENV A=1\n' });
    const other = new ForkdClient({ url: daemon.url, apiKey: (await admin.keys.create({ tenant: 'beta' })).key });
    await other.templates.build({ name: 'df-beta', dockerfile: 'FROM template:base\nENV A=1\n' });
    await assert.rejects(build('FROM template:df-beta\n'), { code: 'NOT_FOUND' });
    await assert.rejects(build('FROM template:base\nVOLUME /data\n'), (err: { code?: string; message?: string }) => err.code === 'INVALID_ARGUMENT' && /line 2: VOLUME/.test(err.message ?? ''));
    await assert.rejects(build('FROM template:base\nADD https://example.com/x /x\n'), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(tenant.templates.build({ name: 'df-bad', dockerfile: 'FROM template:base\n', from: 'base' }), { code: 'INVALID_ARGUMENT' });
    assert.ok(!(await tenant.templates.list()).some((t) => t.name === 'df-bad'));
  });

  test("the tenant's policy judges every RUN, CMD and ENTRYPOINT before anything runs", async () => {
    await admin.tenants.setPolicy('acme', { exec: { allow: ['^ls$'] } });
    try {
      const refused = async (dockerfile: string) =>
        assert.rejects(tenant.templates.build({ name: 'df-pol', dockerfile }), (err: { code?: string; message?: string }) => err.code === 'PERMISSION_DENIED' && /tenant:exec\.allow/.test(err.message ?? ''));
      await refused('FROM template:base\nRUN id > /tmp/owned\n');
      await refused('FROM template:base\nRUN ["/usr/bin/id"]\n');
      await refused('FROM template:base\nRUN ls\nCMD ["sleep", "1000"]\n');
      assert.ok(!(await tenant.templates.list()).some((t) => t.name === 'df-pol'));
    } finally {
      await admin.tenants.setPolicy('acme', {});
    }
  });
});
