import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Limits } from '@forkd/protocol';
import { isRoot } from '../../testing/test-node.js';
import { openRuncHarness } from './runc-test-harness.js';
import type { RuncOptions } from './runc-options.js';
import type { RuntimeHarness } from './runtime-conformance.js';
import { DESCRIPTORS_FILE } from './runc-direct-dump.js';
import { RuncRuntime } from './runc-runtime.js';

/**
 * Dumps without runc (runc-direct-dump.ts) on real runc and CRIU. Whether
 * runc ran is told by the marker its dump writes into its state
 * (`<state root>/<id>/checkpoint`, at CRIU's post-dump), which a dump
 * without runc does not: each test removes it before the dump it asks about.
 */
describe('dumps without runc (real runc, CRIU)', { skip: !isRoot && 'needs root' }, () => {
  let h: RuntimeHarness;
  let o: RuncOptions;
  let n = 0;
  before(async () => {
    h = await openRuncHarness(async (opts) => (o = opts));
  });
  after(async () => {
    await h?.close();
  });

  const spec = async (k: string) => ({ root: await h.root(k), hostname: k, limits: Limits.parse({ memoryMb: 256, cpus: 1, pids: 128 }), env: {}, idmap: h.idmap });
  /** A dump of k (left running, or frozen as for a pause), its root committed while frozen; whether runc did it, and CRIU's log. */
  const dump = async (k: string, leaveRunning = true, runtime = h.runtime) => {
    const marker = join(o.stateRoot, k, 'checkpoint');
    await rm(marker, { force: true });
    const imagesDir = await h.dir();
    const workDir = await h.dir();
    const snapKey = `snapshots/${k}-${++n}/rootfs`;
    const whileFrozen = await h.frozenCommit(k, snapKey);
    await runtime.checkpoint(k, { imagesDir, workDir, leaveRunning, ...(whileFrozen ? { whileFrozen } : {}) });
    assert.equal(await h.runtime.images.complete(imagesDir), true);
    return { imagesDir, snapKey, byRunc: existsSync(marker), log: await readFile(join(workDir, 'dump.log'), 'utf8') };
  };
  const kept = (k: string) => join(o.bundleRoot, k, 'dump-request.json');

  test('the first dump of an init is runc\'s, the next ones (left running or frozen) are not and restore with its memory; a restore\'s init starts with runc again', async () => {
    const a = `direct-a-${++n}`;
    await h.runtime.start(a, await spec(a));
    const value = await h.memory(a);
    const first = await dump(a);
    assert.equal(first.byRunc, true, 'the first dump is runc\'s');
    assert.ok(existsSync(kept(a)), 'its request kept');
    const second = await dump(a);
    assert.equal(second.byRunc, false, 'the second is not');
    const third = await dump(a);
    assert.equal(third.byRunc, false);
    assert.equal(await readFile(join(third.imagesDir, DESCRIPTORS_FILE), 'utf8'), await readFile(join(first.imagesDir, DESCRIPTORS_FILE), 'utf8'), 'runc\'s descriptors.json in it');
    assert.equal((await h.runtime.state(a)).status, 'running', 'left running');
    const paused = await dump(a, false);
    assert.equal(paused.byRunc, false, 'a dump that keeps the tree frozen (a pause) uses the same request');
    assert.equal((await h.runtime.state(a)).status, 'paused', 'left frozen');
    await h.runtime.thaw(a);
    assert.equal((await h.runtime.state(a)).status, 'running');
    await h.runtime.destroy(a);

    const b = `direct-b-${++n}`;
    await h.runtime.restore(b, { ...(await spec(b)), root: await h.rootFrom(b, third.snapKey) }, { imagesDir: third.imagesDir });
    assert.equal(await h.memory(b), value, 'restored from a dump without runc, its memory came back');
    await h.runtime.settleMemory(b);
    assert.equal((await dump(b)).byRunc, true, 'a restored init: runc\'s request for the old one is not used');
    assert.equal((await dump(b)).byRunc, false);
    await h.runtime.destroy(b);
  });

  test('a kept request for another process (the same pid, another start) is not used; one that cannot be sent falls back to runc', async () => {
    const a = `direct-c-${++n}`;
    await h.runtime.start(a, await spec(a));
    const value = await h.memory(a);
    assert.equal((await dump(a)).byRunc, true);
    const record = JSON.parse(await readFile(kept(a), 'utf8')) as { init: { startTime: string } };
    await writeFile(kept(a), JSON.stringify({ ...record, init: { ...record.init, startTime: '1' } }));
    assert.equal((await dump(a)).byRunc, true, 'another start time: runc');
    assert.equal((await dump(a)).byRunc, false, 'runc kept its request again');
    await writeFile(join(o.bundleRoot, a, 'dump-request'), 'junk');
    const last = await dump(a);
    assert.equal(last.byRunc, true, 'a request the wrapper cannot send: runc, in the same dump');
    assert.equal(await h.memory(a), value);
    await h.runtime.destroy(a);
    const b = `direct-d-${++n}`;
    await h.runtime.restore(b, { ...(await spec(b)), root: await h.rootFrom(b, last.snapKey) }, { imagesDir: last.imagesDir });
    assert.equal(await h.memory(b), value);
    await h.runtime.destroy(b);
  });

  test("CRIU logs a relayed dump at FORKD_CRIU_DUMP_LOG_LEVEL (2 by default: no info or debug lines), runc's and later ones alike; 4 gives runc's debug log back", async () => {
    assert.equal(o.criuDumpLogLevel, 2, 'the default setting');
    const a = `direct-e-${++n}`;
    await h.runtime.start(a, await spec(a));
    // "Dumping finished successfully" is CRIU's info (3), "SEIZE" its debug (4): neither at 2.
    const verbose = (log: string) => /Dumping finished successfully|SEIZE/.test(log);
    const first = await dump(a);
    assert.equal(first.byRunc, true);
    assert.equal(verbose(first.log), false, `runc's dump at level 2: ${first.log.slice(0, 300)}`);
    const later = await dump(a);
    assert.equal(later.byRunc, false);
    assert.equal(verbose(later.log), false, 'a dump without runc at level 2');
    const debug = await dump(a, true, new RuncRuntime({ ...o, criuDumpLogLevel: 4 }));
    assert.equal(debug.byRunc, false);
    assert.equal(verbose(debug.log), true, 'level 4: CRIU\'s debug log');
    await h.runtime.destroy(a);
  });
});
