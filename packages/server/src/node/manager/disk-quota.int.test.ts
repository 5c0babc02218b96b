import { rm, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { createTestNode, hostFootprint, isRoot, orphans, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import type { DiskQuotas } from '../storage/disk-quota.js';
import { poolQuotas, quotasInconsistent } from '../storage/quota-mode.js';
import type { NodeEvent } from '../node-event.js';

const MiB = 2 ** 20;
const QUOTA_MB = 64;

describe('disk quotas and the pool free-space watch (real Btrfs)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  const events: NodeEvent[] = [];

  /** Writes `mb` MiB of incompressible data (zstd would shrink zeros to nothing) and reports how it went. */
  const fill = async (id: string, mb: number) => (await run(node.manager, id, `dd if=/dev/urandom of=/root/fill-$RANDOM bs=1M count=${mb} conv=fsync 2>&1; echo rc=$?`)).stdout;
  let quotas: () => DiskQuotas;
  const templateBytes = async () => (await quotas().usage(node.storage.path(node.templates.volume('base'))))!.referencedBytes;
  // The exact limit is set in the background once the agent answers (SandboxDisk.settle); until then it is HEADROOM_MB above.
  const limitOf = async (id: string) => {
    await node.manager.settled();
    return (await quotas().usage(await node.manager.rootfs(id)))?.limitBytes;
  };
  const refused = /Disk quota exceeded|No space left on device/;
  const rejects = async (p: Promise<unknown>, code: string, message: RegExp) =>
    assert.rejects(p, (e: unknown) => {
      assert.ok(e instanceof ForkdError, String(e));
      assert.equal(e.code, code, e.message);
      assert.match(e.message, message);
      return true;
    });

  before(async () => {
    node = await createTestNode({ onEvent: (e) => events.push(e) });
    // Simple quotas where the kernel has them; FORKD_QUOTA_MODE=full runs this file against full qgroups.
    const q = (await poolQuotas(node.config.pool.mountPoint))!;
    quotas = () => q;
  });
  after(async () => node?.dispose());

  test('a write past the quota fails inside with EDQUOT; a neighbour, the host and the daemon go on', async () => {
    const a = await node.manager.create({ diskMb: QUOTA_MB, memoryMb: 128 });
    const b = await node.manager.create({ diskMb: 512, memoryMb: 128 });
    assert.equal(a.limits.diskMb, QUOTA_MB);
    assert.equal((await node.manager.create({ memoryMb: 128 }).then(async (s) => (await node.manager.delete(s.id), s))).limits.diskMb, 10240, 'the default quota is recorded');
    const over = await fill(a.id, 100);
    assert.match(over, refused);
    assert.doesNotMatch(over, /rc=0\n$/);
    // The neighbour writes more than the first one's quota; so does the host, into the pool and next to its image.
    assert.match(await fill(b.id, 100), /rc=0\n$/);
    const hostFile = join(node.config.pool.mountPoint, 'host-write');
    await exec('dd', ['if=/dev/urandom', `of=${hostFile}`, 'bs=1M', 'count=100', 'conv=fsync']);
    await rm(hostFile);
    // Qgroup numbers are those of the last transaction (enforcement also counts what is reserved since).
    await exec('btrfs', ['filesystem', 'sync', node.config.pool.mountPoint]);
    assert.equal((await run(node.manager, a.id, ['echo', 'ok'])).stdout, 'ok\n');
    assert.equal((await node.manager.get(a.id)).state, 'running');

    const m = await node.manager.metrics(a.id);
    assert.equal(m.diskQuotaBytes, QUOTA_MB * MiB);
    assert.ok(m.diskQuotaUsedBytes! > (QUOTA_MB - 16) * MiB && m.diskQuotaUsedBytes! <= (QUOTA_MB + 1) * MiB, `used ${m.diskQuotaUsedBytes}`);
    const mb = await node.manager.metrics(b.id);
    assert.ok(mb.diskQuotaUsedBytes! >= 100 * MiB && mb.diskQuotaUsedBytes! < 120 * MiB, `neighbour used ${mb.diskQuotaUsedBytes}`);

    // Deleting files gives the room back.
    await run(node.manager, a.id, 'rm -f /root/fill-*; sync');
    await exec('btrfs', ['filesystem', 'sync', node.config.pool.mountPoint]);
    assert.match(await fill(a.id, 32), /rc=0\n$/);
    await node.manager.delete(a.id);
    await node.manager.delete(b.id);
  });

  /** The kernel may leave full qgroups' numbers inconsistent after a drop: the keeper rescans (quota-keeper.ts). Simple quotas never are. */
  const dropped = async () => {
    await exec('btrfs', ['subvolume', 'sync', node.config.pool.mountPoint]);
    await node.quotaKeeper?.check();
    assert.equal(await quotasInconsistent(node.config.pool.mountPoint), false);
  };

  test('the quota is kept by snapshots, forks, rewind and pause/resume', async () => {
    const simple = quotas().mode === 'simple';
    const a = (await node.manager.create({ diskMb: QUOTA_MB, memoryMb: 128 })).id;
    // Full qgroups count what the root references (its template's bytes too); simple quotas what the sandbox wrote.
    const want = (simple ? 0 : await templateBytes()) + QUOTA_MB * MiB;
    assert.equal(await limitOf(a), want);
    const snap = await node.manager.snapshot(a);
    assert.equal(await limitOf(a), want);
    // A snapshot shares every extent of the root: the quota must not start again from zero.
    assert.match(await fill(a, 40), /rc=0\n$/);
    const s2 = await node.manager.snapshot(a);
    assert.match(await fill(a, 40), refused);

    const [f] = await node.manager.fork(snap.id);
    assert.equal(f!.limits.diskMb, QUOTA_MB);
    assert.equal(await limitOf(f!.id), want);
    assert.match(await fill(f!.id, 100), refused);
    // A fork of the snapshot holding a's 40 MiB keeps its limit when its parent and that snapshot go. Full
    // qgroups: those 40 MiB count against the fork too (24 MiB of room); simple quotas: they stay charged
    // to a, who wrote them, and the fork has its whole quota for what it writes itself.
    const [g] = await node.manager.fork(s2.id);
    await node.manager.delete(a);
    await dropped();
    assert.equal(await limitOf(g!.id), want);
    assert.match(await fill(g!.id, 16), /rc=0\n$/, 'the fork still writes within its quota after its parent is gone');
    assert.match(await fill(g!.id, 32), simple ? /rc=0\n$/ : refused);

    const c = (await node.manager.create({ diskMb: QUOTA_MB, memoryMb: 128 })).id;
    const s1 = await node.manager.snapshot(c);
    await node.manager.rewind(c, s1.id);
    assert.equal(await limitOf(c), want, 'after a rewind (a new root volume)');
    await node.manager.pause(c);
    await node.manager.resume(c);
    assert.equal(await limitOf(c), want, 'after pause/resume');
    assert.match(await fill(c, 100), refused);

    // Resume and rewind give a sandbox a new root volume; what it wrote before still counts (simple
    // quotas: the new root joins the sandbox's lineage group), or each pause would give fresh room.
    const d = (await node.manager.create({ diskMb: QUOTA_MB, memoryMb: 128 })).id;
    assert.match(await fill(d, 40), /rc=0\n$/);
    const sd = await node.manager.snapshot(d);
    await node.manager.pause(d);
    await node.manager.resume(d);
    assert.match(await fill(d, 40), refused, 'no fresh quota after pause/resume');
    await node.manager.rewind(d, sd.id);
    assert.match(await fill(d, 40), refused, 'no fresh quota after a rewind');
    for (const id of [f!.id, g!.id, c, d]) await node.manager.delete(id);
    await node.manager.settled();
    await dropped();
  });

  test('bad diskMb values get a validation error naming the field', async () => {
    for (const v of [0, -1, 1.5, 2 ** 40, '10']) await rejects(node.manager.create({ diskMb: v as number }), 'INVALID_ARGUMENT', /diskMb/);
    assert.equal((await node.manager.list()).length, 0);
  });

  test('disk admission: quotas beyond overcommit × the pool are refused, naming the limit', async () => {
    await node.manager.settled();
    const before = { ...(await hostFootprint(node, node.config.cgroupParent)), snapshots: (await node.store.snapshotTotals()).count };
    // 16 GiB pool × FORKD_DISK_OVERCOMMIT 64 (test config) = 1 TiB.
    await rejects(node.manager.create({ diskMb: 2 * 1024 * 1024 }), 'RESOURCE_EXHAUSTED', /FORKD_DISK_OVERCOMMIT/);
    const a = (await node.manager.create({ diskMb: 600 * 1024, memoryMb: 128 })).id;
    await rejects(node.manager.fork(a, 1), 'RESOURCE_EXHAUSTED', /FORKD_DISK_OVERCOMMIT/);
    await node.manager.delete(a);
    // The refused live fork took no snapshot either.
    assert.deepEqual({ ...(await hostFootprint(node, node.config.cgroupParent)), snapshots: (await node.store.snapshotTotals()).count }, before);
  });

  test('a pool filled to the threshold refuses creates, forks and snapshots before making anything', async () => {
    const a = (await node.manager.create({ memoryMb: 128 })).id;
    const snap = await node.manager.snapshot(a);
    const filler = join(node.config.pool.mountPoint, 'filler');
    try {
      await exec('btrfs', ['filesystem', 'sync', node.config.pool.mountPoint]);
      const s = await statfs(node.config.pool.mountPoint);
      const size = s.blocks * s.bsize;
      const threshold = Math.max(2048 * MiB, size * 0.05);
      // Allocated, not written: instant, and leaves 256 MiB less than the threshold.
      await exec('fallocate', ['-l', String(Math.floor(s.bavail * s.bsize - threshold + 256 * MiB)), filler]);
      await exec('btrfs', ['filesystem', 'sync', node.config.pool.mountPoint]);
      await node.manager.settled();
      const before = { ...(await hostFootprint(node, node.config.cgroupParent)), records: (await node.manager.list()).length, snapshots: (await node.store.snapshotTotals()).count };
      const full = /storage pool is almost full.*FORKD_POOL_MIN_FREE_MB/;
      await rejects(node.manager.create({}), 'RESOURCE_EXHAUSTED', full);
      await rejects(node.manager.fork(a), 'RESOURCE_EXHAUSTED', full);
      await rejects(node.manager.fork(snap.id, 3), 'RESOURCE_EXHAUSTED', full);
      await rejects(node.manager.snapshot(a, { name: 'x' }), 'RESOURCE_EXHAUSTED', full);
      // The timeline's own snapshot is skipped, with an event: the sandbox is not harmed.
      await node.manager.policySnapshot(a);
      assert.ok(events.some((e) => e.sandboxId === a && e.operation === 'snapshot-skipped' && e.code === 'RESOURCE_EXHAUSTED'));
      assert.equal((await node.manager.get(a)).state, 'running');
      assert.deepEqual({ ...(await hostFootprint(node, node.config.cgroupParent)), records: (await node.manager.list()).length, snapshots: (await node.store.snapshotTotals()).count }, before);
      assert.deepEqual(await orphans(node), []);
      assert.equal((await run(node.manager, a, ['echo', 'ok'])).stdout, 'ok\n');
    } finally {
      await rm(filler, { force: true });
      await exec('btrfs', ['filesystem', 'sync', node.config.pool.mountPoint]);
    }
    const [f] = await node.manager.fork(snap.id);
    await node.manager.delete(f!.id);
    await node.manager.delete(a);
  });
});
