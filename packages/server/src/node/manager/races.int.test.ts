import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { ForkdError, type SandboxInfo } from '@forkd/protocol';
import { createTestNode, isRoot, orphans, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';

/**
 * Every lifecycle operation of a sandbox is serialised with the others
 * (SandboxManager's per-sandbox lock): a delete issued while a snapshot, a
 * fork, a rewind or a pause runs waits for it, and nothing is left behind.
 * Each race is run with the delete issued at several delays after the
 * operation, and followed by a check of the store against the host.
 */
const DELAYS_MS = [0, 15, 60];

/** A failure with the tool output behind it (CRIU's log tail), which the assertion message alone would lose. */
function explain(err: unknown): never {
  const tail = err instanceof ForkdError ? err.details?.stderrTail : undefined;
  throw typeof tail === 'string' ? new Error(`${(err as Error).message}\n${tail}`, { cause: err }) : err;
}

describe('deletes racing lifecycle operations (real CRIU, real Btrfs)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
  });
  after(async () => node?.dispose());

  const m = () => node.manager;

  async function sandbox(): Promise<SandboxInfo> {
    const s = await m().create({ memoryMb: 256 });
    assert.equal((await run(m(), s.id, 'echo before > /tmp/f')).exitCode, 0);
    return s;
  }

  /** Nothing orphaned, nothing missing: after every race. */
  async function assertConsistent(what: string): Promise<void> {
    await m().settled();
    assert.deepEqual(await orphans(node), [], `after ${what}`);
  }

  async function assertGone(id: string): Promise<void> {
    await assert.rejects(m().get(id), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  }

  async function assertForksWork(forks: SandboxInfo[]): Promise<void> {
    for (const f of forks) assert.equal((await run(m(), f.id, ['cat', '/tmp/f'])).stdout, 'before\n', `fork ${f.id} has the parent's files and runs`);
  }

  test('delete during a snapshot waits for it; the snapshot goes with the sandbox', async () => {
    for (const delay of DELAYS_MS) {
      const s = await sandbox();
      const snap = m().snapshot(s.id);
      await sleep(delay);
      const del = m().delete(s.id);
      const [taken] = await Promise.all([snap, del]).catch(explain);
      await assertGone(s.id);
      await assert.rejects(m().getSnapshot(taken.id), /not found/);
      await assertConsistent(`snapshot + delete at ${delay} ms`);
    }
  });

  test('a snapshot after a delete answers NOT_FOUND and leaves nothing', async () => {
    const s = await sandbox();
    const del = m().delete(s.id);
    await sleep(5);
    await assert.rejects(m().snapshot(s.id), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    await del;
    await assertConsistent('delete + snapshot');
  });

  test('delete of the source during a live fork: the forks come up whole, the source goes', async () => {
    for (const delay of DELAYS_MS) {
      const s = await sandbox();
      const fork = m().fork(s.id, 2);
      await sleep(delay);
      const del = m().delete(s.id);
      const [forks] = await Promise.all([fork, del]).catch(explain);
      await assertGone(s.id);
      await assertForksWork(forks);
      for (const f of forks) await m().delete(f.id);
      await assertConsistent(`live fork + delete at ${delay} ms`);
    }
  });

  test('delete of the owner during a fork from its snapshot: the restores have read the images first', async () => {
    for (const delay of DELAYS_MS) {
      const s = await sandbox();
      const snap = await m().snapshot(s.id);
      const fork = m().fork(snap.id, 2);
      await sleep(delay);
      const del = m().delete(s.id);
      const [forks] = await Promise.all([fork, del]).catch(explain);
      await assertForksWork(forks);
      for (const f of forks) await m().delete(f.id);
      await assertConsistent(`fork of a snapshot + delete of its sandbox at ${delay} ms`);
    }
  });

  test('snapshot delete during a fork from it', async () => {
    for (const delay of DELAYS_MS) {
      const s = await sandbox();
      const snap = await m().snapshot(s.id);
      const fork = m().fork(snap.id, 1);
      await sleep(delay);
      const del = m().deleteSnapshot(snap.id);
      const [forks] = await Promise.all([fork, del]).catch(explain);
      await assertForksWork(forks);
      await assert.rejects(m().getSnapshot(snap.id), /not found/);
      for (const f of [...forks, s]) await m().delete(f.id);
      await assertConsistent(`fork of a snapshot + snapshot delete at ${delay} ms`);
    }
  });

  test('delete during a rewind: the rewind finishes, then everything of the sandbox goes (both instances)', async () => {
    for (const delay of DELAYS_MS) {
      const s = await sandbox();
      const snap = await m().snapshot(s.id);
      await run(m(), s.id, 'echo after > /tmp/f');
      const rewind = m().rewind(s.id, snap.id);
      await sleep(delay);
      const del = m().delete(s.id);
      await Promise.all([rewind, del]).catch(explain);
      await assertGone(s.id);
      await assertConsistent(`rewind + delete at ${delay} ms`);
    }
  });

  test('delete during a pause, and during the resume after it', async () => {
    const s = await sandbox();
    const pause = m().pause(s.id);
    await sleep(15);
    await Promise.all([pause, m().delete(s.id)]);
    await assertGone(s.id);
    await assertConsistent('pause + delete');
    const t = await sandbox();
    await m().pause(t.id);
    const resume = m().resume(t.id);
    await sleep(15);
    await Promise.all([resume, m().delete(t.id)]);
    await assertConsistent('resume + delete');
  });

  test('a fork still being created (listed as creating) is deleted only once it runs', async () => {
    const s = await sandbox();
    const snap = await m().snapshot(s.id);
    const fork = m().fork(snap.id, 1);
    await sleep(0);
    const child = (await m().list()).find((x) => x.forkedFrom === snap.id);
    assert.ok(child, 'the fork is listed while it is made');
    assert.equal(child.state, 'creating');
    const del = m().delete(child.id);
    const [forks] = await Promise.all([fork, del]).catch(explain);
    assert.equal(forks[0]?.id, child.id);
    await assertGone(child.id);
    await m().delete(s.id);
    await assertConsistent('delete of a creating fork');
  });

  test('two deletes, pin against snapshot delete: one wins, the other answers NOT_FOUND', async () => {
    const s = await sandbox();
    const snap = await m().snapshot(s.id);
    const [pin, del] = await Promise.allSettled([m().pinSnapshot(snap.id, true), m().deleteSnapshot(snap.id)]);
    assert.equal(del.status, 'fulfilled');
    assert.equal(pin.status, 'fulfilled', 'queued first, so it ran first');
    const [a, b] = await Promise.allSettled([m().delete(s.id), m().delete(s.id)]);
    assert.equal(a.status, 'fulfilled');
    assert.ok(b.status === 'rejected' && b.reason instanceof ForkdError && b.reason.code === 'NOT_FOUND');
    await assertConsistent('double delete');
  });
});
