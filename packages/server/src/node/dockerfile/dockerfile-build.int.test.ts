import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BuildStep, BuildTemplateRequest } from '@forkd/protocol';
import { readBuildContext } from '@forkd/sdk/build-context';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import { startTestRegistry, type TestRegistry } from '../../testing/test-registry.js';
import { debianLayer, writeTestImage } from '../../testing/test-images.js';
import { silentLogger } from '../../shared/logger.js';
import { poolLayout } from '../storage/pool-layout.js';
import { ImageVolumes } from '../images/image-volumes.js';
import { StepCache } from './step-cache.js';

const dockerfile = (lastRun: string) => `# syntax=docker/dockerfile:1
ARG BASE
FROM \${BASE}
ARG GREET=hello
ENV APP_HOME=/srv/app \\
    GREETING="\${GREET} world"
# a comment inside nothing
WORKDIR $APP_HOME
COPY files/ ./
COPY --chown=app:app --chmod=0750 run.sh /usr/local/bin/
COPY . /ctx/
RUN ["/bin/bash", "-c", "echo \\"built as $(id -u) in $(pwd) with $GREET and $GREETING\\" > built.txt"]
USER app
LABEL purpose=test
EXPOSE 8080
${lastRun}
CMD /usr/local/bin/run.sh
`;

describe('templates from Dockerfiles (a registry on loopback, an image made offline)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let registry: TestRegistry;
  let work: string;
  let ctx: string;
  const build = async (req: Omit<BuildTemplateRequest, 'context'>, dir = ctx) => {
    const lines: string[] = [];
    const steps: BuildStep[] = [];
    const { context } = await readBuildContext(dir);
    const t0 = performance.now();
    const t = await node.service.buildTemplate({ ...req, context }, (l, s) => {
      if (process.env.FORKD_TEST_DEBUG) console.log(`# ${(performance.now() - t0).toFixed(0)} ${l}`);
      lines.push(l);
      if (s) steps.push(s);
    });
    return { t, ms: performance.now() - t0, lines, steps, status: (i: number) => steps.filter((s) => s.index === i && s.status !== 'start').map((s) => s.status) };
  };

  before(async () => {
    registry = await startTestRegistry();
    node = await createTestNode({ config: { registries: { insecure: [registry.host] } } });
    work = await mkdtemp(join(tmpdir(), 'forkd-dockerfile-'));
    // Debian-ish with /bin/sh (bash as sh) for RUN's shell form, and stat and readlink to look with.
    const deb = await debianLayer(['/usr/bin/stat', '/usr/bin/readlink']);
    await writeTestImage(join(work, 'oci'), 'deb', [deb, [{ path: 'usr/bin/sh', type: 'symlink', linkpath: 'bash' }]], { Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'FROM_IMAGE=yes'] });
    await registry.push(join(work, 'oci'), 'deb', 'deb:1');
    ctx = join(work, 'ctx');
    await mkdir(join(ctx, 'files/sub'), { recursive: true });
    await writeFile(join(ctx, 'files/a.txt'), 'file a\n');
    await writeFile(join(ctx, 'files/sub/b.txt'), 'file b\n');
    await writeFile(join(ctx, 'run.sh'), '#!/bin/bash\necho "started as $(id -un) in $(pwd) with $GREETING" > /tmp/started\nexec sleep 100000\n');
    await chmod(join(ctx, 'run.sh'), 0o755);
    await writeFile(join(ctx, 'secret.txt'), 'not for the image\n');
    await writeFile(join(ctx, '.dockerignore'), '# secrets stay home\nsecret.txt\n');
    // Modes are copied as they are (the daemon's umask would make them 0600): the image's user reads these.
    for (const f of ['files', 'files/sub']) await chmod(join(ctx, f), 0o755);
    for (const f of ['files/a.txt', 'files/sub/b.txt']) await chmod(join(ctx, f), 0o644);
    // Links that point out of the context: sent as links, never read through.
    await writeFile(join(work, 'outside.txt'), 'host file outside the context\n');
    await symlink('../outside.txt', join(ctx, 'up-link'));
    await symlink('/etc/hostname', join(ctx, 'abs-link'));
  });
  after(async () => {
    await node?.dispose();
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const first = () => dockerfile('RUN echo one > /tmp/last');
  let firstMs = 0;

  test('env, workdir, files, user and start command, as Docker would make them', async () => {
    const { t, lines, ms } = await build({ name: 'df-app', dockerfile: first(), buildArgs: { BASE: `${registry.host}/deb:1` } });
    assert.equal(t.warm, true, 'CMD left running: a warm template');
    assert.ok(lines.includes(`Step 1/14 : ARG BASE`), lines.join('\n'));
    assert.ok(lines.some((l) => l.startsWith('Step 4/14 : ENV APP_HOME=/srv/app')));
    const s = await node.manager.create({ template: 'df-app' });
    const sh = (cmd: string, user?: string) => run(node.manager, s.id, cmd, user ? { user } : {}).then((r) => r.stdout);
    assert.equal(await sh('cat /tmp/started'), 'started as app in /srv/app with hello world\n');
    assert.equal(await sh('pwd; id -un; echo "$APP_HOME|$GREETING|$FROM_IMAGE|${GREET:-unset}"'), '/srv/app\napp\n/srv/app|hello world|yes|unset\n', 'ARG values are not kept in the env');
    assert.equal(await sh('cat built.txt'), 'built as 0 in /srv/app with hello and hello world\n', 'RUN ran as root (before USER) in the WORKDIR with the ARG');
    assert.equal(await sh('cat a.txt sub/b.txt /tmp/last'), 'file a\nfile b\none\n');
    assert.equal(await sh('stat -c "%u:%g %a" /usr/local/bin/run.sh a.txt'), '1001:1001 750\n0:0 644\n');
    assert.equal(await sh('cat /ctx/secret.txt 2>&1; readlink /ctx/up-link /ctx/abs-link; cat /ctx/files/a.txt'), 'cat: /ctx/secret.txt: No such file or directory\n../outside.txt\n/etc/hostname\nfile a\n');
    assert.equal(await sh('cat /ctx/up-link 2>&1'), 'cat: /ctx/up-link: No such file or directory\n', 'the link points inside the sandbox, not at the host file');
    firstMs = ms;
    console.log(`# Dockerfile build (2 RUN, 3 COPY, warm start): ${ms.toFixed(0)} ms`);
  });

  test('a rebuild after changing the last RUN takes every earlier step from the cache and runs only that one', async () => {
    const before = await build({ name: 'df-app', dockerfile: first(), buildArgs: { BASE: `${registry.host}/deb:1` } });
    const { lines, steps, status, ms } = await build({ name: 'df-app', dockerfile: dockerfile('RUN echo two > /tmp/last'), buildArgs: { BASE: `${registry.host}/deb:1` } });
    for (let i = 1; i <= 12; i++) assert.deepEqual(status(i), ['cached'], `step ${i}: ${lines.join('\n')}`);
    assert.deepEqual(status(13), ['done'], 'the changed RUN ran');
    assert.equal(steps.filter((s) => s.status === 'done' && /^RUN /.test(s.instruction)).length, 1, 'one RUN ran');
    assert.ok(lines.filter((l) => l === ' ---> CACHED').length >= 12);
    assert.ok(ms < firstMs, `the rebuild (${ms} ms) ran less than the first build (${firstMs} ms)`);
    const s = await node.manager.create({ template: 'df-app' });
    assert.equal((await run(node.manager, s.id, 'cat /tmp/last')).stdout, 'two\n');
    console.log(`# rebuild, last RUN changed: ${ms.toFixed(0)} ms (the first build: see above; an unchanged one before it ${before.ms.toFixed(0)} ms)`);
  });

  test('a rebuild with no change at all does nothing, in well under a second', async () => {
    const req = { name: 'df-app', dockerfile: dockerfile('RUN echo two > /tmp/last'), buildArgs: { BASE: `${registry.host}/deb:1` } };
    await build(req);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const { lines, steps, ms } = await build(req);
      assert.ok(lines.includes('template df-app is up to date'), lines.join('\n'));
      assert.equal(steps.filter((s) => s.status === 'done').length, 0);
      times.push(ms);
    }
    const best = Math.min(...times);
    assert.ok(best < 1000, `no-change rebuild took ${best} ms`);
    console.log(`# rebuild, no change: ${times.map((t) => t.toFixed(0)).join(', ')} ms`);
  });

  test('FROM template:base; a changed context file reruns its COPY; a failing RUN fails the build and keeps the template', async () => {
    const df = 'FROM template:base\nENV X=1\nCOPY files/a.txt /opt/a.txt\nRUN cat /opt/a.txt /opt/a.txt > /opt/b.txt\n';
    const { t } = await build({ name: 'df-base', dockerfile: df });
    assert.equal(t.from, 'base', 'recorded as a --from build is (template exports go incremental against it)');
    const s = await node.manager.create({ template: 'df-base' });
    assert.equal((await run(node.manager, s.id, 'cat /opt/b.txt; echo $X')).stdout, 'file a\nfile a\n1\n');
    await writeFile(join(ctx, 'files/a.txt'), 'file a, changed\n');
    const again = await build({ name: 'df-base', dockerfile: df });
    assert.deepEqual(again.status(2), ['cached']);
    assert.deepEqual(again.status(3), ['done'], 'the COPY of a changed file reran');
    const s2 = await node.manager.create({ template: 'df-base' });
    assert.equal((await run(node.manager, s2.id, 'cat /opt/b.txt')).stdout, 'file a, changed\nfile a, changed\n');
    await assert.rejects(build({ name: 'df-base', dockerfile: `${df}RUN exit 3\n` }), (err: { code?: string; message?: string }) => err.code === 'FAILED_PRECONDITION' && /exit 3/.test(err.message ?? ''));
    await assert.rejects(build({ name: 'df-base', dockerfile: `${df}HEALTHCHECK CMD true\n` }), (err: { code?: string; message?: string }) => err.code === 'INVALID_ARGUMENT' && /line 5/.test(err.message ?? ''));
    await assert.rejects(build({ name: 'df-base', dockerfile: 'FROM template:base\nCOPY ../../outside.txt /x\n' }), { code: 'NOT_FOUND' });
    const s3 = await node.manager.create({ template: 'df-base' });
    assert.equal((await run(node.manager, s3.id, 'cat /opt/b.txt')).stdout, 'file a, changed\nfile a, changed\n', 'the failed builds left the template as it was');
    assert.equal((await node.manager.templates()).filter((x) => x.name.startsWith('forkd-stage-')).length, 0);
  });

  test('steps and image layers unused for the cache age are pruned; templates made from them keep working; a rebuild runs them again', async () => {
    const req = { name: 'df-app', dockerfile: dockerfile('RUN echo three > /tmp/last'), buildArgs: { BASE: `${registry.host}/deb:1` } };
    await build(req);
    const steps = new StepCache(node.storage);
    const images = new ImageVolumes({ storage: node.storage, access: node.config.registries, maxBytes: 2 ** 30, logger: silentLogger });
    const volumes = async () => ({ steps: (await node.storage.list(poolLayout.buildSteps)).length, layers: (await node.storage.list(poolLayout.imageLayers)).length });
    const made = await volumes();
    assert.ok(made.steps > 0 && made.layers > 0, JSON.stringify(made));
    // Used just now: a week's age keeps everything.
    assert.deepEqual((await steps.prune(7 * 86_400_000)).removed, []);
    assert.deepEqual((await images.prune(7 * 86_400_000)).removed, []);
    const later = Date.now() + 8 * 86_400_000;
    const pruned = { steps: await steps.prune(7 * 86_400_000, later), layers: await images.prune(7 * 86_400_000, later) };
    assert.equal(pruned.steps.failed + pruned.layers.failed, 0);
    assert.deepEqual(await volumes(), { steps: 0, layers: 0 });
    const s = await node.manager.create({ template: 'df-app' });
    assert.equal((await run(node.manager, s.id, 'cat /tmp/last a.txt')).stdout, 'three\nfile a, changed\n', 'the template keeps its files');
    const again = await build({ ...req, dockerfile: dockerfile('RUN echo four > /tmp/last') });
    assert.ok(again.lines.some((l) => /pulling 2 layer/.test(l)), again.lines.join('\n'));
    assert.equal(again.steps.filter((x) => x.status === 'cached').length, 0, 'nothing left to take from the cache');
    const s2 = await node.manager.create({ template: 'df-app' });
    assert.equal((await run(node.manager, s2.id, 'cat /tmp/last')).stdout, 'four\n');
  });
});
