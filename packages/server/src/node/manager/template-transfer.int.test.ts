import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { hasCode, mb, MB, openTransferPair, type FlakyBlobs, type TransferPair } from '../../testing/transfer-pair.js';
import { exec } from '../../shared/exec.js';
import { run, waitFor } from '../../testing/helpers.js';
import { TOKEN_SERVER } from '../../testing/token-server.js';
import { isRoot, orphans, type TestNode } from '../../testing/test-node.js';

const code = hasCode;

/**
 * Two nodes with pools of their own (each imported `base` itself), one blob
 * store: a warm template built on A travels to B and serves creates there
 * as it does on A.
 */
describe('template export and import (real Btrfs send/receive, CRIU)', { skip: !isRoot && 'needs root', concurrency: 1 }, () => {
  let pair: TransferPair | undefined;
  let blobs: FlakyBlobs;
  let a: TestNode;
  let b: TestNode;
  const token = async (n: TestNode, id: string) => waitFor(async () => (await run(n.manager, id, ['curl', '-s', 'http://127.0.0.1:9000/'])).stdout, 5000, 'the start command\'s server');

  before(async () => {
    pair = await openTransferPair();
    ({ a, b, blobs } = pair);
  });
  after(async () => pair?.dispose());

  test('a warm template built on A, exported, imported on B: creates on B start with its processes and files; a re-import is a no-op', async () => {
    const t = await a.service.buildTemplate(
      { name: 'py-warm', from: 'base', setup: ['mkdir -p /app', `cat > /app/server.py <<'EOF'\n${TOKEN_SERVER}\nEOF`, 'echo built > /app/marker'], start: 'cd /app && exec python3 server.py' },
      () => {},
    );
    assert.equal(t.warm, true);
    const onA = await a.manager.create({ template: 'py-warm' });
    const tokenA = await token(a, onA.id);

    const t0 = performance.now();
    const ex = await a.service.exportTemplate('py-warm');
    console.log(`warm template export: ${mb(ex.bytesUploaded)} in ${Math.round(performance.now() - t0)} ms`);
    assert.match(ex.manifest, /^templates\/py-warm\/[0-9a-f-]{36}\/template\.json$/);
    assert.deepEqual(await a.service.exportTemplate('py-warm'), { manifest: ex.manifest, bytesUploaded: 0 }, 'exported once per version');
    const vol = JSON.parse(new TextDecoder().decode((await blobs.get(ex.manifest.replace(/template\.json$/, 'manifest.json')))!)) as { parent?: { name: string }; rootfs: { size: number } };
    console.log(`its root: ${mb(vol.rootfs.size)} incremental against ${vol.parent?.name}`);
    assert.equal(vol.parent?.name, 'base', 'its root is sent against the template it was built from');
    assert.ok(vol.rootfs.size < 50 * MB, `only its own changes (${mb(vol.rootfs.size)})`);

    const t1 = performance.now();
    const got = await b.service.importTemplate(ex.manifest);
    console.log(`warm template import: ${Math.round(performance.now() - t1)} ms`);
    assert.deepEqual(got, t, 'the same template: name, id, creation time, warm, from');
    assert.deepEqual((await b.service.templates()).find((x) => x.name === 'py-warm'), t, 'listed as on A');

    const onB = await b.manager.create({ template: 'py-warm', env: { SEEN: 'b' } });
    assert.equal(await token(b, onB.id), tokenA, 'the start command\'s memory came with it: restored, not restarted');
    assert.ok((await (await b.manager.guest(onB.id)).listProcesses()).some((p) => p.tag === 'start' && p.running));
    assert.equal((await run(b.manager, onB.id, 'cat /app/marker; echo $SEEN')).stdout, 'built\nb\n', 'its files, and exec works');
    assert.equal((await b.manager.recordOf(onB.id))?.templateId, t.id);

    const chunkGets = blobs.countGets('chunks/');
    const vols = await subvolumes(b);
    assert.deepEqual(await b.service.importTemplate(ex.manifest), t, 'a re-import answers the template as it is');
    assert.equal(blobs.countGets('chunks/'), chunkGets, 'and reads no chunk');
    assert.deepEqual(await subvolumes(b), vols, 'nor makes a volume');

    // B's copy keeps A's send identity: B's exports of it, and of its sandboxes, name what the store holds.
    assert.deepEqual(await b.service.exportTemplate('py-warm'), { manifest: ex.manifest, bytesUploaded: 0 });
    const snap = await b.manager.snapshot(onB.id);
    const sx = await b.service.exportSnapshot(snap.id);
    assert.ok(sx.bytesUploaded < 40 * MB, `a sandbox of the copy exports without its template (${mb(sx.bytesUploaded)})`);
    assert.equal((await blobs.keys('templates/py-warm/')).filter((k) => k.endsWith('/manifest.json')).length, 1, 'one volume of py-warm in the store');
    await a.manager.delete(onA.id);
    await b.manager.delete(onB.id);
  });

  test('a snapshot of a sandbox of a built template sends that template against its own parent, and imports on B', async () => {
    await a.service.buildTemplate({ name: 'inc', setup: ['echo inc > /etc/inc'] }, () => {});
    const id = (await a.manager.create({ template: 'inc', memoryMb: 256 })).id;
    await a.manager.pause(id);
    const ex = await a.service.exportSnapshot((await a.manager.recordOf(id))!.resumeFrom!);
    const [key] = (await blobs.keys('templates/inc/')).filter((k) => k.endsWith('/manifest.json'));
    const vol = JSON.parse(new TextDecoder().decode((await blobs.get(key!))!)) as { parent?: { name: string }; rootfs: { size: number } };
    assert.equal(vol.parent?.name, 'base');
    assert.ok(vol.rootfs.size < 50 * MB, `the template's own changes only (${mb(vol.rootfs.size)})`);
    await a.manager.delete(id);
    await b.service.importSnapshot(ex.manifest, { asSandbox: true });
    await b.manager.resume(id);
    assert.equal((await run(b.manager, id, ['cat', '/etc/inc'])).stdout, 'inc\n');
    await b.manager.delete(id);
  });

  test('another template of the name on B is ALREADY_EXISTS; base and unknown manifests are refused; nothing is left', async () => {
    await a.service.buildTemplate({ name: 'clash', setup: ['echo a > /etc/which'] }, () => {});
    await b.service.buildTemplate({ name: 'clash', setup: ['echo b > /etc/which'] }, () => {});
    const ex = await a.service.exportTemplate('clash');
    await assert.rejects(b.service.importTemplate(ex.manifest), code('ALREADY_EXISTS'));
    const s = await b.manager.create({ template: 'clash' });
    assert.equal((await run(b.manager, s.id, ['cat', '/etc/which'])).stdout, 'b\n', 'B\'s own is untouched');
    await b.manager.delete(s.id);
    await b.manager.deleteTemplate('clash');
    // Gone from B: the import is a copy like any other now.
    const got = await b.service.importTemplate(ex.manifest);
    assert.equal(got.warm, false);
    const c = await b.manager.create({ template: 'clash' });
    assert.equal((await run(b.manager, c.id, ['cat', '/etc/which'])).stdout, 'a\n');
    await b.manager.delete(c.id);
    await assert.rejects(a.service.exportTemplate('base'), code('FAILED_PRECONDITION'));
    await assert.rejects(b.service.importTemplate('templates/x/00000000-0000-0000-0000-000000000000/template.json'), code('NOT_FOUND'));
    await blobs.put('hostile/template.json', new TextEncoder().encode(JSON.stringify({ kind: 'forkd-template-export', version: 1, template: { name: '../etc', id: 'x', uuid: 'no', manifest: 'm' } })));
    await assert.rejects(b.service.importTemplate('hostile/template.json'), code('INVALID_ARGUMENT'));
    // Two volumes that name each other as parent: refused, not waited on forever.
    const U = ['11111111-1111-1111-1111-111111111111', '22222222-2222-2222-2222-222222222222'] as const;
    const ref = (i: 0 | 1) => ({ name: `loop${i}`, id: 'tpl_loop', uuid: U[i], manifest: `templates/loop${i}/${U[i]}/manifest.json` });
    const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
    const empty = { size: 0, sha256: 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', chunks: [] };
    for (const i of [0, 1] as const) await blobs.put(ref(i).manifest, enc({ kind: 'forkd-template', version: 1, name: `loop${i}`, uuid: U[i], parent: ref(i === 0 ? 1 : 0), rootfs: empty, exportedAt: 'x' }));
    await blobs.put('hostile/loop.json', enc({ kind: 'forkd-template-export', version: 1, template: ref(0), createdAt: 'x', images: [], exportedAt: 'x' }));
    await assert.rejects(b.service.importTemplate('hostile/loop.json'), code('INVALID_ARGUMENT'));
    for (const n of [a, b]) {
      await n.manager.settled();
      assert.deepEqual(await orphans(n), []);
    }
  });
});

async function subvolumes(n: TestNode): Promise<string[]> {
  const r = await exec('btrfs', ['subvolume', 'list', '-o', n.config.pool.mountPoint]);
  return r.stdout.split('\n').map((l) => l.split(' path ')[1] ?? '').filter(Boolean).sort();
}
