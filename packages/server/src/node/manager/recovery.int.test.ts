import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';
import { JUMP, JUMPED, JUMPING_COUNTER } from '../../testing/counter.js';
import type { NodeEvent } from '../node-event.js';
import { PAGES_LOST, parseMarker } from '../runtime/lazy-pages-waits.js';
import { memoryHash, startMemoryHog } from '../../testing/memory-hog.js';

/**
 * A sandbox whose init dies while the daemon runs (the OOM killer, a kill
 * from the host): the reconciler notices and brings it back under its id
 * from its latest snapshot; one that dies again right away is left failed.
 */
describe('recovery of a sandbox whose init died (real CRIU)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let id = '';
  const events: NodeEvent[] = [];

  const count = async () => Number((await run(node.manager, id, ['cat', '/tmp/count'])).stdout);
  const assertCounterRuns = async () => {
    const c = await count();
    await waitFor(async () => (await count()) > c, 5000, 'the counter to go on');
  };
  const killInit = async () => {
    const key = (await node.manager.recordOf(id))?.instance ?? id;
    const { pid } = await node.runtime.state(key);
    assert.ok(pid > 0);
    process.kill(pid, 'SIGKILL');
    await waitFor(async () => (await node.runtime.usage(key)).pids === 0, 10_000, 'the sandbox cgroup to empty');
  };

  before(async () => {
    node = await createTestNode({ onEvent: (e) => void events.push(e) });
    id = (await node.manager.create({})).id;
    (await node.manager.spawn(id, { argv: JUMPING_COUNTER, tag: 'counter' })).process.detach();
    await waitFor(async () => (await count()) > 5, 5000, 'the counter to start');
  });
  after(async () => node?.dispose());

  test('its init killed: the next reconciler tick brings it back from its latest snapshot', async () => {
    const snap = await node.manager.snapshot(id);
    const atSnap = Number(await readFile(join(node.manager.snapshotDir(snap.id), 'rootfs/tmp/count'), 'utf8'));
    await run(node.manager, id, 'echo later > /tmp/later');
    assert.equal((await run(node.manager, id, JUMP)).exitCode, 0);
    await waitFor(async () => (await count()) > JUMPED, 5000, 'the counter to jump');

    await killInit();
    await node.tick();

    const info = (await node.manager.get(id));
    assert.equal(info.state, 'running', JSON.stringify(info));
    assert.equal(info.recovered?.fromSnapshot, snap.id);
    assert.match(info.recovered?.reason ?? '', /init process died while the daemon ran/);
    assert.ok((info.recovered?.lostSeconds ?? -1) >= 0);
    const c = await count();
    assert.ok(c >= atSnap && c < JUMPED, `memory from the snapshot (${atSnap}), not from before the kill: ${c}`);
    await assertCounterRuns();
    assert.equal((await run(node.manager, id, ['test', '-e', '/tmp/later'])).exitCode, 1, 'files of the snapshot');
    const mine = events.filter((e) => e.sandboxId === id);
    assert.deepEqual(
      mine.map((e) => [e.operation, e.code]),
      [
        ['lost', 'UNAVAILABLE'],
        ['recover', 'OK'],
      ],
    );
    assert.match(mine[1]!.detail, new RegExp(`from snapshot ${snap.id} .*s of work lost`));
  });

  test('dying again soon after its recovery: left failed, not brought back in a loop; resume brings it back', async () => {
    await killInit();
    await node.tick();
    const info = (await node.manager.get(id));
    assert.equal(info.state, 'failed');
    assert.match(info.error ?? '', /not brought back automatically/);
    await assert.rejects(node.manager.guest(id), (e: ForkdError) => e.code === 'FAILED_PRECONDITION');

    const resumed = await node.manager.resume(id);
    assert.equal(resumed.state, 'running');
    assert.ok(resumed.recovered?.fromSnapshot, 'from its snapshot');
    assert.ok((await count()) < JUMPED);
    await assertCounterRuns();
    assert.deepEqual(
      events.filter((e) => e.sandboxId === id).map((e) => e.operation),
      ['lost', 'recover', 'lost', 'recover'],
    );
  });

  test('with the policy serving (timers and events, no pass): a death is noticed by the exit watch at once', async () => {
    const b = (await node.manager.create({})).id;
    const snap = await node.manager.snapshot(b);
    const policy = await node.startPolicy();
    assert.equal(policy.watched(b), true, 'its death is announced, not polled');
    const key = (await node.manager.recordOf(b))?.instance ?? b;
    const t0 = Date.now();
    process.kill((await node.runtime.state(key)).pid, 'SIGKILL');
    await waitFor(async () => (await node.manager.get(b)).recovered !== undefined, 30_000, 'the sandbox to be brought back');
    const info = await node.manager.get(b);
    assert.equal(info.state, 'running');
    assert.equal(info.recovered?.fromSnapshot, snap.id);
    assert.ok(Date.now() - t0 < 30_000);
    assert.equal((await run(node.manager, b, ['true'])).exitCode, 0);
    await waitFor(async () => policy.watched(b), 5000, 'the new instance to be watched');
    await node.manager.delete(b);
  });

  test('a lazy restore whose page daemon dies: killed rather than left on zeroed memory, lost for that reason, brought back whole from the snapshot it came from', { skip: !existsSync('/dev/userfaultfd') && 'no userfaultfd' }, async () => {
    await node.startPolicy();
    const c = (await node.manager.create({ memoryMb: 1024 })).id;
    // Above FORKD_LAZY_RESTORE_MIN_MB: its pages come in through the lazy daemon.
    await startMemoryHog(node.manager, c, 192);
    const sum = () => memoryHash(node.manager, c);
    const whole = await sum();
    // The daemon runs until its last page is in (~0.1 s for these): killed as soon as the resume answers.
    let killed = false;
    for (let i = 0; i < 5 && !killed; i++) {
      await node.manager.hibernate(c);
      await node.manager.resume(c);
      const key = (await node.manager.recordOf(c))?.instance ?? c;
      const daemon = parseMarker(await readFile(join(node.config.stateDir, 'bundles', key, 'criu', 'lazy-pages.pid'), 'utf8').catch(() => ''));
      if (!daemon) continue;
      process.kill(daemon.pid, 'SIGKILL');
      killed = true;
    }
    assert.ok(killed, 'a page daemon caught before its end');
    const pause = (await node.manager.timeline(c)).filter((x) => x.reason === 'pause').pop();
    await waitFor(async () => (await node.manager.get(c)).recovered !== undefined, 30_000, 'the sandbox to be brought back');
    const info = await node.manager.get(c);
    assert.equal(info.state, 'running');
    assert.equal(info.recovered?.reason, PAGES_LOST);
    assert.equal(info.recovered?.fromSnapshot, pause?.id);
    assert.equal(await sum(), whole, 'its memory whole, not zeros where the pages were still out');
    assert.ok(events.some((e) => e.sandboxId === c && e.operation === 'lost' && e.detail?.includes(PAGES_LOST)));
    await node.manager.delete(c);
  });
});
