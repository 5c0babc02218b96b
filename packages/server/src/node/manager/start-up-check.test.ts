import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Limits } from '@forkd/protocol';
import type { SandboxRecord } from '../../store/store.js';
import { testManager } from './manager-test-kit.js';

function record(id: string, state: SandboxRecord['state'], more: Partial<SandboxRecord> = {}): SandboxRecord {
  return { id, template: 'base', templateId: 'base', state, limits: Limits.parse({}), env: {}, metadata: {}, createdAt: new Date().toISOString(), ...more };
}

test('at start: interrupted creates and deletes go, a running sandbox without processes is marked lost, a paused one loses its leftover processes, orphans are swept', async () => {
  const t = await testManager({ recoverOnStart: false });
  try {
    // What a crash left: records in every state, instances and volumes nobody owns.
    for (const [id, state] of [
      ['sbx-creating', 'creating'],
      ['sbx-stopping', 'stopping'],
      ['sbx-paused', 'paused'],
      ['sbx-gone', 'running'],
      ['sbx-alive', 'running'],
      ['sbx-frozen', 'running'],
    ] as const) {
      await t.store.insertSandbox(record(id, state));
      await t.storage.prepare(`sandboxes/${id}`, 'templates/base');
    }
    t.runtime.plant('sbx-creating');
    t.runtime.plant('sbx-paused');
    t.runtime.plant('sbx-alive');
    t.runtime.plant('sbx-frozen', 'paused');
    t.runtime.plant('sbx-orphan');
    await t.storage.prepare('sandboxes/sbx-orphan-volume', 'templates/base');
    await t.storage.create('snapshots/snap-norecord/rootfs');
    await t.storage.create('snapshots/.tmp-snap-halfmade/rootfs');

    const m = t.restart({ recoverOnStart: false });
    await m.recover();

    assert.equal(await t.store.getSandbox('sbx-creating'), undefined, 'an interrupted create is undone');
    assert.equal(await t.store.getSandbox('sbx-stopping'), undefined, 'an interrupted delete is finished');
    assert.equal(await t.storage.exists('sandboxes/sbx-creating'), false);
    assert.equal(await t.storage.exists('sandboxes/sbx-stopping'), false);

    assert.equal((await t.store.getSandbox('sbx-paused'))?.state, 'paused');
    assert.equal(t.runtime.instances.has('sbx-paused'), false, 'the frozen processes of a recorded pause are destroyed');

    const gone = await t.store.getSandbox('sbx-gone');
    assert.equal(gone?.state, 'failed', 'a running sandbox without processes is marked lost');
    assert.ok(gone?.lost, 'with the lost marker (it can be brought back)');
    assert.ok(await t.storage.exists('sandboxes/sbx-gone'), 'its files are kept');

    assert.equal((await t.store.getSandbox('sbx-alive'))?.state, 'running', 'a sandbox whose agent answers stays running');
    assert.equal(t.runtime.instances.get('sbx-alive')?.status, 'running');
    assert.equal(t.runtime.instances.get('sbx-frozen')?.status, 'running', 'a sandbox left frozen by a crash mid-snapshot is thawed');
    assert.equal((await t.store.getSandbox('sbx-frozen'))?.state, 'running');

    assert.equal(t.runtime.instances.has('sbx-orphan'), false, 'an instance without a record is destroyed');
    assert.equal(await t.storage.exists('sandboxes/sbx-orphan-volume'), false, 'a volume without a record is removed');
    assert.equal(await t.storage.exists('snapshots/snap-norecord'), false, 'a snapshot directory without a record is removed');
    assert.equal(await t.storage.exists('snapshots/.tmp-snap-halfmade'), false, 'a half-made snapshot is removed');
  } finally {
    await t.close();
  }
});

test('at start with recovery on: a lost sandbox comes back from its latest snapshot, one whose agent does not answer is lost', async () => {
  const t = await testManager();
  try {
    const s = await t.manager.create({ template: 'base' });
    const snap = await t.manager.snapshot(s.id);
    const quiet = await t.manager.create({ template: 'base' });
    // The host went down: every process is gone.
    t.runtime.instances.clear();
    t.guests.silent.add(quiet.id);
    t.runtime.plant(quiet.id);

    const m = t.restart();
    await m.recover();

    const back = await m.get(s.id);
    assert.equal(back.state, 'running');
    assert.equal(back.recovered?.fromSnapshot, snap.id);
    assert.equal(t.runtime.instances.get(s.id)?.status, 'running');
    const q = await t.store.getSandbox(quiet.id);
    assert.equal(q?.state, 'failed', 'its agent did not answer: lost, and its revival failed (the agent still does not answer)');
    assert.ok(q?.lost);
  } finally {
    await t.close();
  }
});
