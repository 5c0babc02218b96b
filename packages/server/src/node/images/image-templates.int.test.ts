import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import { startTestRegistry, type TestRegistry } from '../../testing/test-registry.js';
import { compileC, debianLayer, hostFiles, writeTestImage } from '../../testing/test-images.js';
import type { TestTarEntry } from '../../testing/tar-build.js';
import { exec } from '../../shared/exec.js';
import { poolLayout } from '../storage/pool-layout.js';
import { parseImageRef } from '@forkd/protocol';
import { silentLogger } from '../../shared/logger.js';
import { copyToDir, pullBytes } from './skopeo.js';
import { bytesRead } from './pull-progress.js';

/** A program that says who and where it is: the distroless image's only file, static. */
const HELLO = `#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
int main(int argc, char **argv) { printf("hello %s %s uid=%d\\n", argc > 1 ? argv[1] : "-", getenv("HELLO") ? getenv("HELLO") : "-", (int)getuid()); return 0; }
`;

describe('templates from OCI images (a registry on loopback, images made offline)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let registry: TestRegistry;
  let work: string;
  const built: Record<string, string[]> = {};
  const build = async (name: string, fromImage: string, extra: { start?: string } = {}) => {
    const lines: string[] = [];
    const t0 = performance.now();
    const t = await node.service.buildTemplate({ name, fromImage, ...extra }, (l) => void lines.push(l));
    built[name] = lines;
    return { t, ms: performance.now() - t0, lines };
  };

  before(async () => {
    registry = await startTestRegistry();
    node = await createTestNode({ config: { registries: { insecure: [registry.host] } } });
    work = await mkdtemp(join(tmpdir(), 'forkd-images-'));
    const deb = await debianLayer();
    const env = { Env: ['PATH=/usr/local/bin:/usr/bin:/bin', 'GREETING=hello from the image'], WorkingDir: '/app', User: 'app' };
    await writeTestImage(join(work, 'oci'), 'deb', [deb, [{ path: 'app/hello.txt', data: 'layer two\n' }, { path: 'etc/.wh.removed', data: '' }]], {
      ...env,
      Entrypoint: ['/bin/bash', '-c'],
      Cmd: ['echo "$GREETING" > /tmp/started; exec sleep 100000'],
    });
    // The same lower layer under another top: its chain's volume is shared.
    await writeTestImage(join(work, 'oci'), 'deb-other', [deb, [{ path: 'other', data: 'x' }]], env);
    await compileC(HELLO, join(work, 'hello'), { static: true });
    await writeTestImage(join(work, 'oci'), 'distroless', [await hostFiles([join(work, 'hello')]).then((f) => f.map((e) => ({ ...e, path: 'hello' })))], { Env: ['HELLO=distroless'] });
    await compileC(HELLO, join(work, 'hello-musl'), { compiler: 'musl-gcc' });
    const musl: TestTarEntry[] = [
      { path: 'bin/busybox', data: readFileSync('/bin/busybox'), mode: 0o755 },
      ...['sh', 'cat', 'ls', 'echo', 'id'].map((n): TestTarEntry => ({ path: `bin/${n}`, type: 'symlink', linkpath: '/bin/busybox' })),
      { path: 'lib/ld-musl-x86_64.so.1', data: readFileSync('/lib/x86_64-linux-musl/libc.so'), mode: 0o755 },
      { path: 'usr/bin/hello-musl', data: readFileSync(join(work, 'hello-musl')), mode: 0o755 },
      { path: 'etc/alpine-release', data: '3.20.0\n' },
      { path: 'etc/passwd', data: 'root:x:0:0:root:/root:/bin/sh\n' },
    ];
    await writeTestImage(join(work, 'oci'), 'musl', [musl], { Env: ['PATH=/usr/sbin:/usr/bin:/sbin:/bin', 'HELLO=musl'], Cmd: ['/bin/sh'] });
    for (const [tag, name] of [['deb', 'deb:1'], ['deb-other', 'deb-other:1'], ['distroless', 'distroless:1'], ['musl', 'alpine-ish:1']] as const) await registry.push(join(work, 'oci'), tag, name);
  });
  after(async () => {
    await node?.dispose();
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  test("an image's env, workdir, user and entrypoint: a warm template whose start command ran", async () => {
    const { t, ms } = await build('deb-env', `${registry.host}/deb:1`);
    assert.equal(t.warm, true);
    assert.equal(t.from, `${registry.host}/deb:1`);
    const t0 = performance.now();
    const s = await node.manager.create({ template: 'deb-env' });
    const createMs = performance.now() - t0;
    assert.equal((await run(node.manager, s.id, ['cat', '/tmp/started'])).stdout, 'hello from the image\n');
    assert.match((await run(node.manager, s.id, ['env'])).stdout, /^GREETING=hello from the image$/m);
    assert.equal((await run(node.manager, s.id, 'pwd; id -u')).stdout, '/app\n1001\n');
    assert.equal((await run(node.manager, s.id, ['id', '-u'], { user: 'root' })).stdout, '0\n');
    assert.equal((await run(node.manager, s.id, ['cat', '/app/hello.txt'])).stdout, 'layer two\n');
    assert.equal((await run(node.manager, s.id, ['cat', '/etc/removed'])).exitCode, 1, 'the whiteout hides the lower layer');
    const procs = await (await node.manager.guest(s.id)).listProcesses();
    assert.ok(procs.some((p) => p.tag === 'start' && p.running));
    await run(node.manager, s.id, 'echo mine > /tmp/own');
    const snap = await node.manager.snapshot(s.id, {});
    const [f] = await node.manager.fork(snap.id, 1);
    assert.equal((await run(node.manager, f!.id, 'cat /tmp/own; pwd; echo $GREETING')).stdout, 'mine\n/app\nhello from the image\n');
    console.log(`# build from a 2-layer image: ${ms.toFixed(0)} ms; first sandbox create: ${createMs.toFixed(0)} ms`);
  });

  test('images sharing lower layers share their volumes; a rebuild from the cache pulls nothing', async () => {
    const { t, lines } = await build('deb-other', `${registry.host}/deb-other:1`);
    assert.equal(t.warm, false, 'no Entrypoint or Cmd: a cold template');
    assert.ok(lines.some((l) => l.includes('unpacking layer 2/2')));
    assert.ok(!lines.some((l) => l.includes('unpacking layer 1/2')), 'the shared lower chain was not unpacked again');
    const again = await build('deb-other', `${registry.host}/deb-other:1`);
    assert.ok(again.lines.some((l) => l.endsWith(': cached')));
    assert.ok(again.ms < 5000, `cached build took ${again.ms} ms`);
    const layers = await node.storage.list(poolLayout.imageLayers);
    assert.equal(layers.filter((k) => !k.endsWith('.root')).length, 3, 'three chains for two images of two layers sharing one');
    const s = await node.manager.create({ template: 'deb-other' });
    assert.equal((await run(node.manager, s.id, ['cat', '/other'])).stdout, 'x');
  });

  test('distroless: no shell, exec of its binary works, and snapshot, fork and rewind', async () => {
    const { t } = await build('distroless', `${registry.host}/distroless:1`);
    assert.equal(t.warm, false);
    const s = await node.manager.create({ template: 'distroless' });
    assert.equal((await run(node.manager, s.id, ['/hello', 'world'])).stdout, 'hello world distroless uid=0\n');
    await assert.rejects(run(node.manager, s.id, 'echo no shell'), /bash|No such file/);
    const snap = await node.manager.snapshot(s.id, {});
    const [f] = await node.manager.fork(snap.id, 1);
    assert.equal((await run(node.manager, f!.id, ['/hello', 'fork'])).stdout, 'hello fork distroless uid=0\n');
    await node.manager.rewind(s.id, snap.id);
    assert.equal((await run(node.manager, s.id, ['/hello'])).exitCode, 0);
  });

  test('musl (Alpine-like, busybox): commands run through its /bin/sh; setup and start commands too', async () => {
    const { t, lines } = await build('alpine-ish', `${registry.host}/alpine-ish:1`);
    assert.equal(t.warm, false, "busybox sh with no input exits: the image's Cmd leaves a cold template");
    assert.ok(lines.some((l) => l.includes('exited')));
    const s = await node.manager.create({ template: 'alpine-ish' });
    assert.equal((await run(node.manager, s.id, 'cat /etc/alpine-release; echo $HELLO')).stdout, '3.20.0\nmusl\n');
    assert.equal((await run(node.manager, s.id, ['hello-musl', 'dynamic'])).stdout, 'hello dynamic musl uid=0\n');
    const snap = await node.manager.snapshot(s.id, {});
    const [f] = await node.manager.fork(snap.id, 1);
    assert.equal((await run(node.manager, f!.id, 'echo forked')).stdout, 'forked\n');
    // A start command of the request's (through its sh) makes it warm.
    const warm = await node.service.buildTemplate({ name: 'alpine-warm', fromImage: `${registry.host}/alpine-ish:1`, setup: ['echo built > /built'], start: 'while true; do sleep 1; done' }, () => {});
    assert.equal(warm.warm, true);
    const w = await node.manager.create({ template: 'alpine-warm' });
    assert.equal((await run(node.manager, w.id, ['cat', '/built'])).stdout, 'built\n');
    assert.equal((await node.manager.templates()).filter((x) => x.name.startsWith('forkd-stage-')).length, 0, 'the staged root is gone and never listed');
  });

  test("a pull's total is known ahead (the manifest's blobs), and skopeo's reads measure the copy against it", async () => {
    const r = parseImageRef(`${registry.host}/deb:1`);
    assert.ok(r.ok && r.ref.kind === 'registry');
    const ref = r.ref;
    const privateDir = await mkdtemp(join(tmpdir(), 'forkd-pull-size-'));
    try {
      const call = { ref, access: node.config.registries, privateDir, logger: silentLogger };
      // Independently of the parser: the image as written, in its OCI layout.
      const layout = join(work, 'oci');
      const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Array<{ digest: string; annotations?: Record<string, string> }> };
      const entry = index.manifests.find((m) => m.annotations?.['org.opencontainers.image.ref.name'] === 'deb')!;
      const blob = (d: string) => join(layout, 'blobs/sha256', d.slice('sha256:'.length));
      const manifest = JSON.parse(readFileSync(blob(entry.digest), 'utf8')) as { config: { size: number }; layers: Array<{ size: number }> };
      const total = manifest.layers.reduce((s, l) => s + l.size, manifest.config.size);
      assert.equal(await pullBytes(call), total);
      let pid = 0;
      let most = 0;
      const copy = copyToDir(call, join(privateDir, 'image'), (p) => (pid = p));
      const watch = setInterval(() => void bytesRead(pid).then((b) => (most = Math.max(most, b))), 2);
      await copy.finally(() => clearInterval(watch));
      // It writes the layers decompressed (more bytes), but reads about what the registry sends.
      assert.ok(most <= total * 1.2 + 2 ** 20, `read ${most} of ${total}`);
      assert.equal(await pullBytes({ ...call, ref: { ...ref, repository: 'nope' } }), undefined, 'unknown: no total, no failure');
    } finally {
      await rm(privateDir, { recursive: true, force: true });
    }
  });

  test('oci-archive: a local image file; refused references and missing images answer clearly', async () => {
    const archive = join(work, 'distroless.tar');
    await exec('skopeo', ['--insecure-policy', 'copy', '--quiet', `oci:${join(work, 'oci')}:distroless`, `oci-archive:${archive}`]);
    const { t } = await build('from-archive', `oci-archive:${archive}`);
    assert.equal(t.from, `oci-archive:${archive}`);
    const s = await node.manager.create({ template: 'from-archive' });
    assert.equal((await run(node.manager, s.id, ['/hello', 'archive'])).stdout, 'hello archive distroless uid=0\n');
    await assert.rejects(build('x', 'oci-archive:relative.tar'), { code: 'INVALID_ARGUMENT' });
    await assert.rejects(build('x', `${registry.host}/nope:1`), { code: 'NOT_FOUND' });
    await assert.rejects(build('x', `oci-archive:${join(work, 'missing.tar')}`), { code: 'NOT_FOUND' });
    await assert.rejects(node.service.create({ template: 'forkd-stage-0123456789abcdef' }), { code: 'NOT_FOUND' });
  });
});
