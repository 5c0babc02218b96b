import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ForkdError } from '@forkd/protocol';
import { testManager, type TestManager } from './manager-test-kit.js';

let t: TestManager;
before(async () => {
  t = await testManager();
});
after(async () => {
  await t.close();
});

test.afterEach(async () => {
  // Whatever a test did, no half-made snapshot stays behind.
  assert.deepEqual((await t.storage.list('snapshots')).filter((k) => k.includes('.tmp-')), [], 'no .tmp- snapshot directory left');
});

const code = (c: string) => (e: unknown) => e instanceof ForkdError && e.code === c;

test('create → running, pause → paused (snapshot recorded, processes gone), resume → running, delete → gone', async () => {
  const s = await t.manager.create({ template: 'base' });
  assert.equal(s.state, 'running');
  assert.equal(t.runtime.instances.get(s.id)?.status, 'running');
  assert.ok(await t.storage.exists(`sandboxes/${s.id}`), 'root volume made');

  const paused = await t.manager.pause(s.id);
  assert.equal(paused.state, 'paused');
  assert.equal(t.runtime.instances.has(s.id), false, 'processes destroyed once the snapshot is recorded');
  const [snap] = await t.manager.timeline(s.id);
  assert.equal(snap?.reason, 'pause');
  assert.equal((await t.store.getSandbox(s.id))?.resumeFrom, snap?.id);
  assert.ok(await t.storage.exists(`snapshots/${snap!.id}/rootfs`), 'snapshot root published');

  const resumed = await t.manager.resume(s.id);
  assert.equal(resumed.state, 'running');
  assert.deepEqual(t.runtime.callsOf('restore'), [s.id]);
  assert.equal((await t.store.getSandbox(s.id))?.resumeFrom, undefined);

  await t.manager.delete(s.id);
  await assert.rejects(t.manager.get(s.id), code('NOT_FOUND'));
  assert.equal(t.runtime.instances.has(s.id), false);
  assert.equal(await t.storage.exists(`sandboxes/${s.id}`), false, 'root volume removed');
  assert.equal(await t.storage.exists(`snapshots/${snap!.id}`), false, 'its snapshots go with it');
});

test('illegal transitions: resume of a running sandbox is a no-op, pause of a failed one FAILED_PRECONDITION, snapshot of a paused one too', async () => {
  const s = await t.manager.create({ template: 'base' });
  const restores = t.runtime.callsOf('restore').length;
  assert.equal((await t.manager.resume(s.id)).state, 'running');
  assert.equal(t.runtime.callsOf('restore').length, restores, 'nothing restored');
  await t.manager.pause(s.id);
  await assert.rejects(t.manager.snapshot(s.id), code('FAILED_PRECONDITION'));
  await t.store.transition(s.id, 'paused', 'failed', 'broken for the test');
  await assert.rejects(t.manager.pause(s.id), code('FAILED_PRECONDITION'));
  await assert.rejects(t.manager.resume(s.id), code('FAILED_PRECONDITION'));
  await t.manager.delete(s.id);
});

test('a record changed behind the manager is a CONFLICT, not a silent overwrite', async () => {
  const s = await t.manager.create({ template: 'base' });
  // The checkpoint blocks; meanwhile the record moves on: the pause's compare-and-set must fail.
  const b = t.runtime.block('checkpoint');
  const pausing = t.manager.pause(s.id);
  await b.reached;
  await t.store.transition(s.id, 'running', 'failed', 'changed concurrently');
  b.release();
  await assert.rejects(pausing, code('CONFLICT'));
  await t.manager.delete(s.id);
});

test('a failed start leaves neither record nor instance', async () => {
  t.runtime.fail('start');
  try {
    await assert.rejects(t.manager.create({ template: 'base' }), code('INTERNAL'));
  } finally {
    t.runtime.succeed('start');
  }
  assert.deepEqual(await t.manager.list(), []);
  assert.deepEqual(await t.storage.list('sandboxes'), []);
});

test('two operations on one sandbox run one after the other', async () => {
  const s = await t.manager.create({ template: 'base' });
  const dumps = t.runtime.callsOf('checkpoint').length;
  const b = t.runtime.block('checkpoint');
  const first = t.manager.snapshot(s.id);
  await b.reached;
  let secondDone = false;
  const second = t.manager.pause(s.id).then((r) => {
    secondDone = true;
    return r;
  });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(secondDone, false, 'the pause waits for the snapshot in progress');
  assert.equal(t.runtime.callsOf('checkpoint').length, dumps + 1, 'no second dump started meanwhile');
  b.release();
  await first;
  assert.equal((await second).state, 'paused');
  await t.manager.delete(s.id);
});

test('a delete asked for right after a fork of a snapshot waits for the fork (owner looked up asynchronously)', async () => {
  const s = await t.manager.create({ template: 'base' });
  const snap = await t.manager.snapshot(s.id);
  const b = t.runtime.block('restore');
  const forking = t.manager.fork(snap.id, 1);
  // Asked in the same turn as the fork, before its owner lookup resolved.
  const deleting = t.manager.delete(s.id);
  let deleted = false;
  void deleting.then(() => (deleted = true));
  await b.reached;
  assert.equal(deleted, false, 'the delete waits while the fork reads the images');
  assert.ok(await t.storage.exists(`snapshots/${snap.id}/rootfs`), 'the snapshot is still there for the restore');
  b.release();
  const [child] = await forking;
  await deleting;
  assert.equal(child?.state, 'running');
  assert.equal(child?.forkedFrom, snap.id);
  await assert.rejects(t.manager.get(s.id), code('NOT_FOUND'));
  await t.manager.delete(child!.id);
});

test('a fork of more than MAX_FORK_COUNT is INVALID_ARGUMENT; a fork of an unknown snapshot NOT_FOUND', async () => {
  await assert.rejects(t.manager.fork('snap-nope', 1000), code('INVALID_ARGUMENT'));
  await assert.rejects(t.manager.fork('snap-nope', 1), code('NOT_FOUND'));
});

test('concurrent creates cannot both take the last room (admission held across the awaited insert)', async () => {
  const small = await testManager({ admission: { host: { memoryMb: 1024, cpus: 8 }, overcommit: { memory: 1, cpus: 0 } } });
  try {
    const results = await Promise.allSettled([small.manager.create({ template: 'base', memoryMb: 600 }), small.manager.create({ template: 'base', memoryMb: 600 })]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, 'one admitted');
    const refused = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    assert.ok(code('RESOURCE_EXHAUSTED')(refused?.reason), String(refused?.reason));
  } finally {
    await small.close();
  }
});

test('a dump that fails because the agent still held a connection the host closed is tried once more; other failures are not', async () => {
  const s = await t.manager.create({ template: 'base' });
  const peerless = () => new ForkdError('INTERNAL', 'criu dump failed: Error (criu/cr-dump.c:1975): Dumping FAILED.', { stderrTail: '(00.036775) Error (criu/sk-unix.c:351): unix: Unix socket 159421 not found\n' });
  const before = t.runtime.callsOf('checkpoint').length;
  t.runtime.fail('checkpoint', peerless(), 1);
  const snap = await t.manager.snapshot(s.id);
  assert.equal(t.runtime.callsOf('checkpoint').length - before, 2, 'dumped twice');
  assert.deepEqual((await t.manager.timeline(s.id)).map((x) => x.id), [snap.id]);
  // Twice in a row: the second failure stands, and nothing is left half-made (see afterEach).
  t.runtime.fail('checkpoint', peerless(), 2);
  await assert.rejects(t.manager.snapshot(s.id), code('INTERNAL'));
  // Any other dump failure is not retried.
  const n = t.runtime.callsOf('checkpoint').length;
  t.runtime.fail('checkpoint', new ForkdError('INTERNAL', 'criu dump failed: something else'), 1);
  await assert.rejects(t.manager.snapshot(s.id), code('INTERNAL'));
  assert.equal(t.runtime.callsOf('checkpoint').length - n, 1);
  assert.equal((await t.manager.timeline(s.id)).length, 1);
  await t.manager.delete(s.id);
});

test('pause without memory: no snapshot, processes gone, root volume kept; resume starts it cold with the same id, limits and env', async () => {
  const s = await t.manager.create({ template: 'base', memoryMb: 256, env: { A: '1' } });
  const paused = await t.manager.pause(s.id, { memory: false });
  assert.equal(paused.state, 'paused');
  assert.equal(paused.pausedMemory, false, 'shown: its resume starts it cold');
  assert.deepEqual(await t.manager.timeline(s.id), [], 'no snapshot taken');
  assert.equal((await t.store.getSandbox(s.id))?.resumeFrom, undefined, 'nothing to restore: its files are the state');
  assert.equal(t.runtime.instances.has(s.id), false, 'processes gone');
  assert.ok(await t.storage.exists(`sandboxes/${s.id}`), 'root volume kept');
  // Pausing again is a no-op, as for a pause with memory.
  assert.equal((await t.manager.pause(s.id, { memory: false })).state, 'paused');

  const starts = t.runtime.callsOf('start').length;
  const restores = t.runtime.callsOf('restore').length;
  const resumed = await t.manager.resume(s.id);
  assert.equal(resumed.state, 'running');
  assert.equal(resumed.pausedMemory, undefined);
  assert.equal(resumed.id, s.id);
  assert.equal(resumed.limits.memoryMb, 256);
  assert.deepEqual(resumed.env, { A: '1' });
  assert.equal(t.runtime.callsOf('start').length, starts + 1, 'started cold');
  assert.equal(t.runtime.callsOf('restore').length, restores, 'nothing restored');
  assert.equal(t.runtime.instances.get(s.id)?.status, 'running');
  assert.equal((await t.store.getSandbox(s.id))?.origin?.snapshot, undefined, 'its state began with the cold start');
  await t.manager.delete(s.id);
});

test('resume with memory false after a pause that kept memory: a cold start on its files; the pause snapshot is no longer held', async () => {
  const s = await t.manager.create({ template: 'base' });
  assert.equal((await t.manager.pause(s.id)).pausedMemory, true);
  const [snap] = await t.manager.timeline(s.id);
  const restores = t.runtime.callsOf('restore').length;
  assert.equal((await t.manager.resume(s.id, { memory: false })).state, 'running');
  assert.equal(t.runtime.callsOf('restore').length, restores, 'nothing restored');
  assert.equal((await t.store.getSandbox(s.id))?.resumeFrom, undefined);
  // No longer the paused state: it can go like any other snapshot.
  await t.manager.deleteSnapshot(snap!.id);
  await t.manager.delete(s.id);
});

test('a filesystem-only pause survives a restart (leftover processes of a crash mid-pause go) and resumes cold', async () => {
  const s = await t.manager.create({ template: 'base' });
  await t.manager.pause(s.id, { memory: false });
  // As if the daemon died between recording the pause and stopping the processes.
  t.runtime.plant(s.id);
  const m = t.restart();
  await m.recover();
  assert.equal((await m.get(s.id)).state, 'paused');
  assert.equal(t.runtime.instances.has(s.id), false, 'the leftover processes are destroyed');
  assert.ok(await t.storage.exists(`sandboxes/${s.id}`), 'its files are kept');
  assert.equal((await m.resume(s.id)).state, 'running');
  await m.delete(s.id);
  await m.close();
});

test('a fork takes the metadata and env given (env over the parent\'s), else the parent\'s', async () => {
  const s = await t.manager.create({ template: 'base', env: { A: '1', B: '2' }, metadata: { k: 'parent' } });
  const snap = await t.manager.snapshot(s.id);
  const [own] = await t.manager.fork(snap.id, 1, undefined, { metadata: { k: 'fork' }, env: { B: 'x', C: '3' } });
  assert.deepEqual(own?.metadata, { k: 'fork' });
  assert.deepEqual(own?.env, { A: '1', B: 'x', C: '3' });
  assert.deepEqual((await t.store.getSandbox(own!.id))?.env, { A: '1', B: 'x', C: '3' }, 'recorded: new processes get it');
  const [plain] = await t.manager.fork(s.id, 1);
  assert.deepEqual(plain?.metadata, { k: 'parent' });
  assert.deepEqual(plain?.env, { A: '1', B: '2' });
  for (const f of [own!, plain!]) await t.manager.delete(f.id);
  await t.manager.delete(s.id);
});

test('rewind of a filesystem-only pause: started cold first, so the state it leaves is snapshotted like a running one\'s', async () => {
  const s = await t.manager.create({ template: 'base' });
  const target = await t.manager.snapshot(s.id);
  await t.manager.pause(s.id, { memory: false });
  const back = await t.manager.rewind(s.id, target.id);
  assert.equal(back.state, 'running');
  const tl = await t.manager.timeline(s.id);
  assert.ok(tl.some((x) => x.reason === 'rewind'), 'the files it left are kept in a rewind snapshot');
  assert.equal((await t.store.getSandbox(s.id))?.origin?.snapshot, target.id);
  await t.manager.delete(s.id);
});

test('a timeout with timeoutPauseMemory false pauses without memory; a plain one keeps it', async () => {
  const s = await t.manager.create({ template: 'base', timeoutSeconds: 60, timeoutPauseMemory: false });
  assert.equal(s.timeoutPauseMemory, false);
  await t.manager.timeOut(s.id);
  const r = await t.manager.get(s.id);
  assert.deepEqual([r.state, r.pausedMemory, r.expiresAt], ['paused', false, undefined]);
  assert.deepEqual(await t.manager.timeline(s.id), [], 'no pause snapshot');
  const back = await t.manager.resume(s.id);
  assert.ok(back.expiresAt, 'a lifetime that ran out starts anew');
  const plain = await t.manager.create({ template: 'base', timeoutSeconds: 60 });
  await t.manager.timeOut(plain.id);
  assert.equal((await t.manager.get(plain.id)).pausedMemory, true);
  for (const x of [s, plain]) await t.manager.delete(x.id);
});
