import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exec } from '@forkd/server';
import { BtrfsStorage, btrfsQuotas, enableQuotas, ensurePool, unmountPool, type DiskQuotas, type PoolOptions, type QuotaMode } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { liveRows, type BenchRow } from './row-line.js';

/**
 * What disk quotas (Btrfs qgroups, as forkd sets them up) cost on the
 * storage operations they touch: the same work on two fresh pools, one
 * with quotas and one without. A sandbox root is a writable snapshot of a
 * template holding the base root filesystem; each round writes into it,
 * takes a read-only snapshot (what every forkd snapshot does while the
 * sandbox is frozen), then deletes both, timed until the kernel's cleaner
 * has dropped them (qgroups make it walk the shared trees).
 */
export async function quotaCostRows(rootfs: string, quick: boolean): Promise<BenchRow[]> {
  const rounds = quick ? 2 : 10;
  const tmp = await mkdtemp(join(tmpdir(), 'forkd-quota-bench-'));
  const rows = liveRows();
  try {
    const off = await measure(join(tmp, 'off'), rootfs, rounds, 'off');
    rows.push(
      { name: 'read-only snapshot of a sandbox root, quotas off', unit: 'ms', summary: summarize(off.snapshot) },
      { name: 'delete root + snapshot, until dropped, quotas off', unit: 'ms', summary: summarize(off.delete) },
    );
    const on = await measure(join(tmp, 'on'), rootfs, rounds, 'auto');
    const mode = on.mode === 'simple' ? 'simple quotas' : 'full qgroups (no simple quotas here)';
    rows.push(
      { name: `read-only snapshot of a sandbox root, quotas on (${mode})`, unit: 'ms', target: 'p50 ≤ off + 10', summary: summarize(on.snapshot) },
      { name: `delete root + snapshot, until dropped, quotas on (${mode})`, unit: 'ms', summary: summarize(on.delete) },
      { name: `forkd-qgroup start (each start or restore of a root; the exact limit follows in the background; ${mode})`, unit: 'ms', summary: summarize(on.limit) },
    );
    const full = await measure(join(tmp, 'full'), rootfs, rounds, 'full');
    rows.push(
      { name: 'read-only snapshot of a sandbox root, full qgroups', unit: 'ms', summary: summarize(full.snapshot) },
      { name: 'delete root + snapshot, until dropped, full qgroups', unit: 'ms', summary: summarize(full.delete) },
      { name: 'enabling full qgroups on a pool with the base template (rescan)', unit: 'ms', summary: summarize([full.enable]) },
    );
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return [...rows];
}

async function measure(dir: string, rootfs: string, rounds: number, quotaMode: 'off' | 'auto' | 'full') {
  const pool: PoolOptions = { mountPoint: join(dir, 'pool'), image: join(dir, 'pool.img'), sizeBytes: 8 * 2 ** 30 };
  await ensurePool(pool);
  const out = { snapshot: [] as number[], delete: [] as number[], limit: [] as number[], enable: 0, mode: 'off' as QuotaMode | 'off' };
  try {
    const storage = new BtrfsStorage(pool.mountPoint);
    const tpl = await storage.create('templates/base');
    await exec('cp', ['-a', '--reflink=never', `${rootfs}/.`, tpl]);
    await exec('btrfs', ['filesystem', 'sync', pool.mountPoint]);
    let quotas: DiskQuotas | undefined;
    if (quotaMode !== 'off') {
      const t0 = performance.now();
      out.mode = (await enableQuotas(pool.mountPoint, quotaMode)).mode;
      out.enable = performance.now() - t0;
      quotas = btrfsQuotas(pool.mountPoint, out.mode);
    }
    for (let i = 0; i < rounds; i++) {
      const root = await storage.prepare(`sandboxes/s${i}`, 'templates/base');
      if (quotas) {
        const t0 = performance.now();
        await quotas.limitForStart(root, 10 * 2 ** 30, 64 * 2 ** 20);
        out.limit.push(performance.now() - t0);
      }
      await exec('dd', ['if=/dev/urandom', `of=${join(root, 'data')}`, 'bs=1M', 'count=20', 'conv=fsync']);
      await exec('cp', ['-a', join(root, 'usr/share/doc'), join(root, 'doc-copy')], { allowFailure: true });
      await exec('btrfs', ['filesystem', 'sync', pool.mountPoint]);
      const t1 = performance.now();
      await storage.commit(`snapshots/s${i}/rootfs`, `sandboxes/s${i}`, { keepActive: true });
      out.snapshot.push(performance.now() - t1);
      await exec('btrfs', ['filesystem', 'sync', pool.mountPoint]);
      const t2 = performance.now();
      await storage.remove(`sandboxes/s${i}`);
      await storage.remove(`snapshots/s${i}/rootfs`);
      await exec('btrfs', ['filesystem', 'sync', pool.mountPoint]);
      await untilDropped(pool.mountPoint);
      out.delete.push(performance.now() - t2);
    }
  } finally {
    await unmountPool(pool);
  }
  return out;
}

/** `btrfs subvolume sync` polls once a second: too coarse here. Deleted subvolumes the cleaner has not dropped yet are listed with -d. */
async function untilDropped(pool: string): Promise<void> {
  for (;;) {
    const r = await exec('btrfs', ['subvolume', 'list', '-d', pool]);
    if (!r.stdout.trim()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
