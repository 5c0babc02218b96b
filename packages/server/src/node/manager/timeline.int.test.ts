import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run, waitFor } from '../../testing/helpers.js';

const DAY = 24 * 3600 * 1000;

describe('rolling timeline and idle hibernation', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
  });
  after(async () => node?.dispose());

  test('active sandboxes get policy snapshots; idle ones hibernate and wake on the next call', async () => {
    const s = await node.manager.create({ snapshotIntervalSeconds: 1, idleTimeoutSeconds: 5 });
    await run(node.manager, s.id, 'echo work > /tmp/w');
    // The exec's connection closes just after its exit is read: open, it would count as activity at the tick's (future) time.
    await waitFor(async () => (await node.manager.openConnections(s.id)) === 0, 5000, 'the exec connection to close');
    const t0 = Date.now();
    await node.tick(t0 + 1500);
    const first = (await node.manager.timeline(s.id));
    assert.equal(first.length, 1);
    assert.equal(first[0]!.reason, 'policy');
    assert.equal(first[0]!.pinned, false);
    // No activity since: no new policy snapshot.
    await node.tick(t0 + 3000);
    assert.equal((await node.manager.timeline(s.id)).length, 1);
    // Idle past the timeout: hibernated to disk.
    await node.tick(t0 + 10_000);
    assert.equal((await node.manager.get(s.id)).state, 'paused');
    assert.equal((await node.runtime.state(s.id)).status, 'missing');
    // The next exec resumes it transparently, files and all.
    const r = await run(node.manager, s.id, ['cat', '/tmp/w']);
    assert.equal(r.stdout, 'work\n');
    assert.equal((await node.manager.get(s.id)).state, 'running');
  });

  test('thinning keeps named snapshots and drops what the policy does not keep', async () => {
    const s = await node.manager.create({ snapshotIntervalSeconds: 0, idleTimeoutSeconds: 0 });
    const named = await node.manager.snapshot(s.id, { name: 'keep-me' });
    const plain = [];
    for (let i = 0; i < 3; i++) plain.push((await node.manager.snapshot(s.id)).id);
    // Manual unnamed snapshots are not pinned: a week later the policy drops them.
    await node.tick(Date.now() + 8 * DAY);
    const left = (await node.manager.timeline(s.id)).map((x) => x.id);
    assert.deepEqual(left, [named.id]);
    assert.equal((await node.manager.get(s.id)).state, 'running', 'idle timeout 0 never hibernates');
  });

  test('lifetimes: a timeout pauses (or kills); resume starts a new lifetime; it can be extended or removed', async () => {
    const s = await node.manager.create({ timeoutSeconds: 60, idleTimeoutSeconds: 0, snapshotIntervalSeconds: 0 });
    const exp = Date.parse(s.expiresAt!);
    assert.ok(Math.abs(exp - (Date.now() + 60_000)) < 5000, s.expiresAt);
    assert.equal(s.onTimeout, 'pause');
    await run(node.manager, s.id, 'echo kept > /tmp/k');
    await node.tick(exp - 1000);
    assert.equal((await node.manager.get(s.id)).state, 'running', 'not before its time');
    await node.tick(exp + 1000);
    const paused = (await node.manager.get(s.id));
    assert.equal(paused.state, 'paused');
    assert.equal(paused.expiresAt, undefined, 'the lifetime is spent');
    await node.tick(exp + 2000);
    assert.equal((await node.manager.get(s.id)).state, 'paused', 'a spent lifetime does nothing more');
    const resumed = await node.manager.resume(s.id);
    assert.ok(Date.parse(resumed.expiresAt!) > Date.now() + 50_000, 'resume starts a new lifetime');
    assert.equal((await run(node.manager, s.id, ['cat', '/tmp/k'])).stdout, 'kept\n');
    const extended = await node.manager.setTimeout(s.id, 3600);
    assert.ok(Date.parse(extended.expiresAt!) > Date.now() + 3500_000);
    assert.equal((await node.manager.setTimeout(s.id, 0)).expiresAt, undefined);
    await node.tick(Date.now() + 8 * DAY);
    assert.equal((await node.manager.get(s.id)).state, 'running', 'no lifetime, no timeout');
    await node.manager.delete(s.id);

    const k = await node.manager.create({ timeoutSeconds: 30, onTimeout: 'kill', idleTimeoutSeconds: 0, snapshotIntervalSeconds: 0 });
    await node.tick(Date.now() + 31_000);
    await assert.rejects(node.manager.get(k.id), /not found/);
  });
});
