import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DESCRIPTORS_FILE, directDump } from './runc-direct-dump.js';
import { liveProcess } from './live-process.js';

/** A bundle whose pid file names this test's own process, an images dir, and a `criu` that records its argv. */
async function setup() {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-direct-'));
  const bundle = join(dir, 'bundle');
  const images = join(dir, 'images');
  await mkdir(bundle);
  await mkdir(images);
  await writeFile(join(bundle, 'init.pid'), `${process.pid}\n`);
  const criu = join(dir, 'criu');
  await writeFile(criu, `#!/bin/sh\necho "$@" > ${dir}/argv\nexit \${FAKE_RC:-0}\n`, { mode: 0o755 });
  return { dir, bundle, images, criu, done: () => rm(dir, { recursive: true, force: true }) };
}

/** What runc's dump leaves: the relay's saved request, runc's descriptors.json in the images. */
async function runcDumped(bundle: string, images: string) {
  await writeFile(join(bundle, 'dump-request'), Buffer.from([0x08, 0x01]));
  await writeFile(join(images, DESCRIPTORS_FILE), '["/dev/null","pipe:[1]","pipe:[2]"]');
}

test('after runc\'s dump, what it needs is kept for the init it dumped, and the next dump is criu dump-saved with it', async () => {
  const s = await setup();
  try {
    const d = directDump(s.bundle, s.criu, { ...process.env, FAKE_RC: '0' });
    assert.deepEqual(d.saveEnv, { FORKD_CRIU_SAVE_REQUEST: join(s.bundle, 'dump-request') });
    assert.equal(await d.kept(), undefined, 'nothing kept before a dump');
    await runcDumped(s.bundle, s.images);
    await d.keep(s.images);
    const k = await d.kept();
    assert.deepEqual(k, { init: await liveProcess(process.pid), descriptors: '["/dev/null","pipe:[1]","pipe:[2]"]' });
    assert.equal((await stat(join(s.bundle, 'dump-request.json'))).mode & 0o777, 0o600);
    const next = join(s.dir, 'next');
    await mkdir(next);
    const r = await d.run(k!, next, join(s.dir, 'work'));
    assert.equal(r.code, 0);
    assert.equal((await readFile(join(s.dir, 'argv'), 'utf8')).trim(), `dump-saved ${join(s.bundle, 'dump-request')} ${next} ${join(s.dir, 'work')}`);
    assert.equal(await readFile(join(next, DESCRIPTORS_FILE), 'utf8'), k!.descriptors, 'runc\'s descriptors.json, as runc writes it');
    assert.equal((await stat(join(next, DESCRIPTORS_FILE))).mode & 0o777, 0o600);
    await d.forget();
    assert.equal(existsSync(join(s.bundle, 'dump-request')) || existsSync(join(s.bundle, 'dump-request.json')), false);
    assert.equal(await d.kept(), undefined);
  } finally {
    await s.done();
  }
});

/** `fn` on a bundle where runc's dump was kept (and checked to be). */
async function afterRuncDump(fn: (s: Awaited<ReturnType<typeof setup>>, d: ReturnType<typeof directDump>) => Promise<void>) {
  const s = await setup();
  try {
    const d = directDump(s.bundle, s.criu, process.env);
    await runcDumped(s.bundle, s.images);
    await d.keep(s.images);
    assert.ok(await d.kept());
    await fn(s, d);
  } finally {
    await s.done();
  }
}

test('nothing kept is used for another init: a new pid in the pid file, another start time, an init gone, a damaged record', () =>
  afterRuncDump(async (s, d) => {
    const record = join(s.bundle, 'dump-request.json');
    const good = await readFile(record, 'utf8');
    await writeFile(join(s.bundle, 'init.pid'), '1\n');
    assert.equal(await d.kept(), undefined, 'the pid file names another process');
    await writeFile(join(s.bundle, 'init.pid'), `${process.pid}\n`);
    const j = JSON.parse(good) as { init: { startTime: string } };
    await writeFile(record, JSON.stringify({ ...j, init: { ...j.init, startTime: '1' } }));
    assert.equal(await d.kept(), undefined, 'the same pid, another start: a later process');
    await writeFile(join(s.bundle, 'init.pid'), '2147483647\n');
    await writeFile(record, good.replace(String(process.pid), '2147483647'));
    assert.equal(await d.kept(), undefined, 'no such process');
    await writeFile(join(s.bundle, 'init.pid'), `${process.pid}\n`);
    for (const damaged of ['', '{', 'null', '{"init":{"pid":"1","startTime":"2"},"descriptors":"[]"}', JSON.stringify({ ...j, descriptors: 7 })]) {
      await writeFile(record, damaged);
      assert.equal(await d.kept(), undefined, `damaged: ${damaged}`);
    }
  }));

test('no request saved (a dump the relay did not carry) or no descriptors: nothing kept, and an earlier record goes', () =>
  afterRuncDump(async (s, d) => {
    await rm(join(s.bundle, 'dump-request'));
    await d.keep(s.images);
    assert.equal(await d.kept(), undefined);
    assert.equal(existsSync(join(s.bundle, 'dump-request.json')), false);
    await runcDumped(s.bundle, s.images);
    await rm(join(s.images, DESCRIPTORS_FILE));
    await d.keep(s.images);
    assert.equal(await d.kept(), undefined);
  }));
