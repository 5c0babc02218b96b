import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { chunkKey } from '../../blob/chunked.js';
import { hasCode, mb, MB, openTransferPair, type FlakyBlobs, type TransferPair } from '../../testing/transfer-pair.js';
import { exec } from '../../shared/exec.js';
import { setSpanSink } from '../../shared/profile.js';
import { JUMP, JUMPED, JUMPING_COUNTER } from '../../testing/counter.js';
import { run, waitFor } from '../../testing/helpers.js';
import { silentLogger } from '../../shared/logger.js';
import { disposeNodeDir, isRoot, orphans, type TestNode } from '../../testing/test-node.js';
import { openNode } from '../node.js';
import { poolLayout } from '../storage/pool-layout.js';

const code = hasCode;

/**
 * Two nodes on one host, each with its own pool that built `base` itself
 * (so their templates have different UUIDs), sharing one blob store: a
 * migration in every test, the template received from the store once.
 */
describe('snapshot export and import (real Btrfs send/receive, CRIU)', { skip: !isRoot && 'needs root', concurrency: 1 }, () => {
  let pair: TransferPair | undefined;
  let blobs: FlakyBlobs;
  let a: TestNode;
  let b: TestNode;
  const count = async (n: TestNode, id: string) => Number((await run(n.manager, id, ['cat', '/tmp/count'])).stdout);

  before(async () => {
    pair = await openTransferPair();
    ({ a, b, blobs } = pair);
  });
  after(async () => pair?.dispose());

  /** A running sandbox on `n` with a file and a counter that jumped (a change only its memory holds). */
  async function sandboxWithState(n: TestNode): Promise<string> {
    const id = (await n.manager.create({ memoryMb: 256, diskMb: 300, env: { KEPT: 'env' } })).id;
    await run(n.manager, id, 'echo kept > /root/file.txt');
    (await n.manager.spawn(id, { argv: JUMPING_COUNTER, tag: 'counter' })).process.detach();
    await waitFor(async () => (await count(n, id)) > 5, 10_000, 'counter to start');
    await run(n.manager, id, JUMP);
    await waitFor(async () => (await count(n, id)) > JUMPED, 5000, 'counter to jump');
    return id;
  }

  test('migration: pause on A, export, import on B under the same id, resume: files, env and memory are there', async () => {
    const id = await sandboxWithState(a);
    const paused = await a.manager.pause(id);
    const snapId = (await a.manager.recordOf(id))!.resumeFrom!;
    assert.equal(paused.state, 'paused');
    const t0 = performance.now();
    const ex = await a.service.exportSnapshot(snapId);
    const exportMs = performance.now() - t0;
    assert.equal(ex.manifest, `snapshots/${snapId}/manifest.json`);
    console.log(`first export (template included): ${mb(ex.bytesUploaded)} uploaded in ${Math.round(exportMs)} ms`);
    assert.equal((await blobs.keys('templates/')).filter((k) => /^templates\/base\/[0-9a-f-]{36}\/manifest\.json$/.test(k)).length, 1, 'the template went to the store once, whole');
    assert.deepEqual(await a.service.exportSnapshot(snapId), { manifest: ex.manifest, bytesUploaded: 0 }, 'an exported snapshot is not exported again');
    await assert.rejects(a.service.importSnapshot(ex.manifest, { asSandbox: true }), code('ALREADY_EXISTS'), 'not over the sandbox it came from');
    await a.manager.delete(id);

    const info = await b.service.importSnapshot(ex.manifest, { asSandbox: true });
    assert.equal(info.id, snapId);
    assert.equal(info.sandboxId, id);
    const rec = await b.manager.recordOf(id);
    assert.equal(rec?.state, 'paused');
    assert.match(rec?.base ?? '', /^template-parents\/[0-9a-f-]{36}\/base$/, 'B built base itself: its root descends from the received one');
    const resumed = await b.manager.resume(id);
    assert.equal(resumed.state, 'running');
    assert.equal((await run(b.manager, id, ['cat', '/root/file.txt'])).stdout, 'kept\n');
    assert.equal((await run(b.manager, id, 'echo $KEPT')).stdout, 'env\n');
    await waitFor(async () => (await b.manager.metrics(id)).diskQuotaBytes === 300 * MB, 10_000, 'its disk quota on B');
    const c0 = await count(b, id);
    assert.ok(c0 > JUMPED, `the counter's memory came back (${c0})`);
    await waitFor(async () => (await count(b, id)) > c0 + 5, 5000, 'the restored counter to go on');

    // And back: B's root descends from the received template, whose send identity is A's template's.
    await run(b.manager, id, 'echo on-b > /root/b.txt');
    await b.manager.pause(id);
    const back = await b.service.exportSnapshot((await b.manager.recordOf(id))!.resumeFrom!);
    assert.ok(back.bytesUploaded < 20 * MB, `B's export re-used the template and A's chunks (${mb(back.bytesUploaded)})`);
    await b.manager.delete(id);
    await a.service.importSnapshot(back.manifest, { asSandbox: true });
    assert.equal((await a.manager.recordOf(id))?.base, undefined, 'on A it descends from A\'s own template again');
    await a.manager.resume(id);
    assert.equal((await run(a.manager, id, ['cat', '/root/file.txt', '/root/b.txt'])).stdout, 'kept\non-b\n');
    assert.ok((await count(a, id)) > c0, 'the counter came back to A with its memory');
    assert.deepEqual(await a.storage.list(poolLayout.templateParents), [], 'A received no template');
    await a.manager.delete(id);
    for (const n of [a, b]) {
      await n.manager.settled();
      assert.deepEqual(await orphans(n), []);
    }
  });

  test('a further export of an idle sandbox after a new snapshot uploads < 5 MB; the import of it resumes on B', async () => {
    const id = (await a.manager.create({ memoryMb: 256 })).id;
    (await a.manager.spawn(id, { argv: ['sleep', 'infinity'], tag: 'idle' })).process.detach();
    const s1 = await a.manager.snapshot(id);
    const first = await a.service.exportSnapshot(s1.id);
    const s2 = await a.manager.snapshot(id);
    const second = await a.service.exportSnapshot(s2.id);
    console.log(`idle sandbox: first export ${mb(first.bytesUploaded)}, further export ${mb(second.bytesUploaded)}`);
    assert.ok(second.bytesUploaded < 5 * MB, `a further export uploaded ${mb(second.bytesUploaded)}`);
    await a.manager.delete(id);
    await b.service.importSnapshot(second.manifest, { asSandbox: true });
    await b.manager.resume(id);
    assert.ok((await (await b.manager.guest(id)).listProcesses()).some((p) => p.tag === 'idle' && p.running));
    await b.manager.delete(id);
  });

  test('a move after a copy ahead: the export compares with the exported snapshot (extents, not bytes) and the import fetches only what changed; memory intact', async () => {
    const id = await sandboxWithState(a);
    const HOG = "import os,time\nb=bytearray(os.urandom(40*1024*1024))\nopen('/tmp/ready','w').write('1')\nwhile True: time.sleep(1)";
    (await a.manager.spawn(id, { argv: ['python3', '-c', HOG], tag: 'hog' })).process.detach();
    await waitFor(async () => (await run(a.manager, id, ['test', '-e', '/tmp/ready'])).exitCode === 0, 30_000, 'hog ready');
    const ahead = await a.manager.snapshot(id);
    await b.service.importSnapshot((await a.service.exportSnapshot(ahead.id)).manifest);
    await a.manager.pause(id);
    const spans: string[] = [];
    const prev = setSpanSink((sp) => spans.push(sp.name));
    let ex;
    try {
      ex = await a.service.exportSnapshot((await a.manager.recordOf(id))!.resumeFrom!);
    } finally {
      setSpanSink(prev);
    }
    assert.ok(spans.includes('exec forkd-shared-ranges'), 'the pages image was compared through its extents');
    assert.ok(ex.bytesUploaded < 5 * MB, `the paused snapshot added ${mb(ex.bytesUploaded)}`);
    await a.manager.delete(id);
    const chunkGets = blobs.countGets('chunks/');
    await b.service.importSnapshot(ex.manifest, { asSandbox: true });
    const fetched = blobs.countGets('chunks/') - chunkGets;
    assert.ok(fetched < 30, `the import fetched ${fetched} chunks (a whole 40 MB image is over 100)`);
    await b.manager.resume(id);
    const c0 = await count(b, id);
    assert.ok(c0 > JUMPED, `the counter's memory came back (${c0})`);
    await waitFor(async () => (await count(b, id)) > c0 + 3, 5000, 'the restored counter to go on');
    assert.ok((await (await b.manager.guest(id)).listProcesses()).some((p) => p.tag === 'hog' && p.running));
    await b.manager.delete(id);
    await b.manager.settled();
    assert.deepEqual(await orphans(b), []);
  });

  test('an idle ~100 MB sandbox: export + import + resume time', async () => {
    const id = (await a.manager.create({ memoryMb: 1024 })).id;
    const HOG = "import os,time\nb=bytearray(os.urandom(100*1024*1024))\nopen('/tmp/ready','w').write('1')\nwhile True: time.sleep(1)";
    (await a.manager.spawn(id, { argv: ['python3', '-c', HOG], tag: 'hog' })).process.detach();
    await waitFor(async () => (await run(a.manager, id, ['test', '-e', '/tmp/ready'])).exitCode === 0, 30_000, 'hog ready');
    await a.manager.pause(id);
    const snapId = (await a.manager.recordOf(id))!.resumeFrom!;
    const t0 = performance.now();
    const ex = await a.service.exportSnapshot(snapId);
    const t1 = performance.now();
    await a.manager.delete(id);
    const t2 = performance.now();
    await b.service.importSnapshot(ex.manifest, { asSandbox: true });
    const t3 = performance.now();
    await b.manager.resume(id);
    const t4 = performance.now();
    console.log(`idle 100 MB sandbox: export ${Math.round(t1 - t0)} ms (${mb(ex.bytesUploaded)}), import ${Math.round(t3 - t2)} ms, resume ${Math.round(t4 - t3)} ms; export+import+resume ${Math.round(t1 - t0 + t4 - t2)} ms`);
    assert.ok((await (await b.manager.guest(id)).listProcesses()).some((p) => p.tag === 'hog' && p.running));
    await b.manager.delete(id);
  });

  test('an interrupted export: the retry completes and uploads only what is missing', async () => {
    const id = await sandboxWithState(a);
    // Pages that no earlier export holds, so the export has many chunks to store.
    await run(a.manager, id, 'head -c 20M /dev/urandom > /root/noise');
    const s = await a.manager.snapshot(id);
    blobs.stored.clear();
    blobs.failPutsAfter = 4;
    await assert.rejects(a.service.exportSnapshot(s.id), code('UNAVAILABLE'));
    blobs.failPutsAfter = Infinity;
    assert.equal(await blobs.has(`snapshots/${s.id}/manifest.json`), false, 'no manifest: the half-done export is not seen as done');
    const first = new Set(blobs.stored);
    assert.ok(first.size >= 4, `the first try stored ${first.size} chunks`);
    blobs.stored.clear();
    const retry = await a.service.exportSnapshot(s.id);
    const again = [...blobs.stored].filter((k) => first.has(k));
    console.log(`interrupted export: the first try stored ${first.size} objects; the retry ${blobs.stored.size} more (${mb(retry.bytesUploaded)}), none twice`);
    assert.deepEqual(again, [], 'nothing the first try stored is stored again');
    assert.ok(retry.bytesUploaded > 20 * MB, 'the rest was uploaded');
    assert.ok(await blobs.has(retry.manifest));
    await a.manager.delete(id);
  });

  test('a corrupted chunk: the import fails cleanly and leaves nothing behind; so does a hostile manifest', async () => {
    const id = await sandboxWithState(a);
    const s = await a.manager.snapshot(id);
    const ex = await a.service.exportSnapshot(s.id);
    await a.manager.delete(id);
    const manifest = JSON.parse(new TextDecoder().decode((await blobs.get(ex.manifest))!)) as { rootfs: { chunks: { sha256: string }[] }; images: { name: string; object: { chunks: { sha256: string }[] } }[] };
    const beforeSubvols = await subvolumes(b);
    for (const sha of [manifest.rootfs.chunks.at(-1)!.sha256, manifest.images.find((f) => f.name.startsWith('pages-'))!.object.chunks[0]!.sha256]) {
      const key = chunkKey(sha);
      const good = (await blobs.get(key))!;
      const bad = Uint8Array.from(good);
      bad[bad.length >> 1]! ^= 0xff;
      await blobs.put(key, bad);
      await assert.rejects(b.service.importSnapshot(ex.manifest, { asSandbox: true }), (e: unknown) => e instanceof ForkdError && e.code === 'INTERNAL' && e.details?.reason === 'corrupt');
      await blobs.put(key, good);
      assert.equal(await b.manager.recordOf(id), undefined, 'no sandbox record');
      await assert.rejects(b.service.getSnapshot(s.id), code('NOT_FOUND'));
      assert.deepEqual(await b.storage.list(poolLayout.snapshots), [], 'no snapshot directory, no half-received volume');
      assert.deepEqual(await subvolumes(b), beforeSubvols, 'no subvolume left');
    }
    const big = { sha256: manifest.rootfs.chunks[0]!.sha256, size: 64 * MB };
    const hostile: Array<[string, string, ForkdError['code']]> = [
      ['not JSON', '{"kind":', 'INVALID_ARGUMENT'],
      ['a path for an image name', JSON.stringify({ ...manifest, images: [{ ...manifest.images[0], name: '../../../etc/passwd' }] }), 'INVALID_ARGUMENT'],
      ['a huge size', JSON.stringify({ ...manifest, rootfs: { ...manifest.rootfs, size: 2 ** 53 } }), 'INVALID_ARGUMENT'],
      ['sizes that do not add up', JSON.stringify({ ...manifest, rootfs: { ...manifest.rootfs, size: 1 } }), 'INVALID_ARGUMENT'],
      ['960 GiB of chunks that add up', JSON.stringify({ ...manifest, rootfs: { size: 15_000 * big.size, sha256: big.sha256, chunks: Array(15_000).fill(big) } }), 'RESOURCE_EXHAUSTED'],
      ['a template manifest that is not there', JSON.stringify({ ...manifest, template: { name: 'base', id: 'base', uuid: '00000000-0000-0000-0000-000000000000', manifest: 'templates/base/none/manifest.json' } }), 'NOT_FOUND'],
    ];
    for (const [what, text, expected] of hostile) {
      await blobs.put('hostile/manifest.json', new TextEncoder().encode(text));
      await assert.rejects(b.service.importSnapshot('hostile/manifest.json', { asSandbox: true }), code(expected), what);
    }
    await assert.rejects(b.service.importSnapshot('no/such/manifest.json'), code('NOT_FOUND'));
    assert.deepEqual(await b.storage.list(poolLayout.snapshots), []);
    assert.deepEqual((await b.storage.list(poolLayout.templateParents)).filter((k) => k.includes('.tmp-')), []);
    // The whole manifest still imports once its chunks are good again.
    await b.service.importSnapshot(ex.manifest, { asSandbox: true });
    await b.manager.resume(id);
    assert.equal((await run(b.manager, id, ['cat', '/root/file.txt'])).stdout, 'kept\n');
    await b.manager.delete(id);
  });

  /** B stopped and opened again on its pool (its start-up sweep runs). */
  async function restartB(): Promise<void> {
    const { dir, env, config } = b;
    await b.close();
    const n = await openNode(config, silentLogger, { blobs });
    b = { ...n, dir, env, dispose: () => disposeNodeDir(n, dir, config) };
    pair!.b = b;
  }

  test('a received template stays while a sandbox descends from it and goes at the next start once none does', async () => {
    const received = await b.storage.list(poolLayout.templateParents);
    assert.equal(received.length, 1, 'B received A\'s base once, for every import');
    const id = (await a.manager.create({ memoryMb: 256 })).id;
    await a.manager.pause(id);
    const ex = await a.service.exportSnapshot((await a.manager.recordOf(id))!.resumeFrom!);
    await a.manager.delete(id);
    await b.service.importSnapshot(ex.manifest, { asSandbox: true });
    await restartB();
    assert.deepEqual(await b.storage.list(poolLayout.templateParents), received, 'kept: the paused sandbox descends from it');
    await b.manager.resume(id);
    await b.manager.delete(id);
    await restartB();
    assert.deepEqual(await b.storage.list(poolLayout.templateParents), [], 'removed: nothing descends from it');
    assert.deepEqual(await orphans(b), []);
  });
});

async function subvolumes(n: TestNode): Promise<string[]> {
  const r = await exec('btrfs', ['subvolume', 'list', '-o', n.config.pool.mountPoint]);
  return r.stdout.split('\n').map((l) => l.split(' path ')[1] ?? '').filter(Boolean).sort();
}


