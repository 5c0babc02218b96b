import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exec } from '@forkd/server';
import { createTestNode, poolQuotas, run, type TestNode } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { liveRows, type BenchRow } from './row-line.js';

/** Longest a backlog is waited for (full qgroups took minutes for a few hundred); FORKD_BENCH_BACKLOG_CAP_S for a shorter look. */
const BACKLOG_CAP_MS = Number(process.env.FORKD_BENCH_BACKLOG_CAP_S ?? 900) * 1000;

/**
 * Operations while Btrfs cleans up after many deletes (issue 24: after a
 * few hundred deletes with full qgroups, btrfs-cleaner stalled every
 * operation for minutes). `count` sandbox-like volumes (a root made from the
 * base template with its quota, that wrote a little, and a snapshot of it)
 * are deleted at once; then resume (after a hibernation: a restore), fork
 * and snapshot of a running sandbox
 * are timed until `btrfs subvolume list -d` is empty, against the same
 * operations on the quiet pool. The volumes are made through Storage, not
 * the API, so the run takes minutes, not an hour; what the cleaner has to
 * do is the same.
 */
export async function cleanupBacklogRows(quick: boolean): Promise<BenchRow[]> {
  const count = Number(process.env.FORKD_BENCH_BACKLOG_COUNT ?? (quick ? 60 : 500));
  const node = await createTestNode({});
  try {
    const mode = (await poolQuotas(node.config.pool.mountPoint))?.mode ?? 'off';
    const m = node.manager;
    const s = (await m.create({ memoryMb: 256 })).id;
    await run(m, s, ['sh', '-c', 'head -c 10485760 /dev/urandom > /root/data && sync']);
    const snap = await m.snapshot(s);
    const rounds = quick ? 2 : 5;
    const label = `${mode === 'simple' ? 'simple quotas' : mode === 'full' ? 'full qgroups' : 'no quotas'}`;
    const rows = liveRows();
    const quiet = emptyOps();
    for (let i = 0; i < rounds; i++) await oneRound(node, s, snap.id, quiet);
    for (const op of OPS) rows.push({ name: `${opName(op)}, quiet pool (${label})`, unit: 'ms', summary: summarize(quiet[op]) });
    await makeBacklog(node, count);
    const pool = node.config.pool.mountPoint;
    await exec('btrfs', ['filesystem', 'sync', pool]);
    const t0 = performance.now();
    await deleteAll(node, count);
    const busy = emptyOps();
    let gone: number | undefined;
    const watch = (async () => {
      while (performance.now() - t0 < BACKLOG_CAP_MS) {
        if (!(await exec('btrfs', ['subvolume', 'list', '-d', pool])).stdout.trim()) return (gone = performance.now() - t0);
        await new Promise((r) => setTimeout(r, 200));
      }
      return undefined;
    })();
    // At least one round, started while the cleaner works; then as many as fit before it is done.
    do await oneRound(node, s, snap.id, busy);
    while (gone === undefined && performance.now() - t0 < BACKLOG_CAP_MS && busy.resume.length < 20);
    for (const op of OPS) {
      rows.push({ name: `${opName(op)} while Btrfs cleans up ${count} deleted sandboxes (${label})`, unit: 'ms', target: count >= 500 ? `p50 ≤ 2× quiet (${(2 * summarize(quiet[op]).p50).toFixed(0)})` : '', summary: summarize(busy[op]) });
    }
    await watch;
    rows.push({
      name: `seconds until the cleanup backlog of ${count} deleted sandboxes is gone (${label}${gone === undefined ? `; not gone after ${BACKLOG_CAP_MS / 1000} s` : ''})`,
      unit: 's',
      target: count >= 500 ? '≤ 60' : '',
      summary: summarize([(gone ?? BACKLOG_CAP_MS) / 1000]),
    });
    return [...rows];
  } finally {
    await node.dispose();
  }
}

interface Ops {
  resume: number[];
  fork: number[];
  snapshot: number[];
}

const emptyOps = (): Ops => ({ resume: [], fork: [], snapshot: [] });
const OPS = ['resume', 'fork', 'snapshot'] as const;
const opName = (op: (typeof OPS)[number]) => (op === 'resume' ? 'resume after hibernation (restore)' : op);

async function oneRound(node: TestNode, id: string, snapId: string, out: Ops): Promise<void> {
  const m = node.manager;
  let t = performance.now();
  await m.snapshot(id);
  out.snapshot.push(performance.now() - t);
  // A hibernation, not a pause: a resume within a pause's hot window is a thaw, which touches no volume.
  await m.hibernate(id);
  t = performance.now();
  await m.resume(id);
  out.resume.push(performance.now() - t);
  t = performance.now();
  const [f] = await m.fork(snapId, 1);
  out.fork.push(performance.now() - t);
  await m.delete(f!.id);
}

/** Roots as a create makes them (from the base template, quota set), each written a little, each with a snapshot. */
async function makeBacklog(node: TestNode, count: number): Promise<void> {
  const quotas = await poolQuotas(node.config.pool.mountPoint);
  const template = node.templates.volume('base');
  for (let i = 0; i < count; i++) {
    const root = await node.storage.prepare(`sandboxes/backlog-${i}`, template);
    await quotas?.limitForStart(root, 10 * 2 ** 30, 0);
    await writeFile(join(root, 'data'), randomBytes(256 * 1024));
    await exec('cp', ['-a', '--reflink=never', join(root, 'etc'), join(root, 'etc-copy')]);
    await node.storage.commit(`snapshots/backlog-${i}/rootfs`, `sandboxes/backlog-${i}`, { keepActive: true });
    if ((i + 1) % 100 === 0) console.log(`  · ${i + 1} of ${count} sandboxes made for the backlog`);
  }
}

/** All at once: one `btrfs subvolume delete` per 100 volumes, as fast as a host deleting sandboxes can. */
async function deleteAll(node: TestNode, count: number): Promise<void> {
  const paths: string[] = [];
  for (let i = 0; i < count; i++) paths.push(node.storage.path(`sandboxes/backlog-${i}`), node.storage.path(`snapshots/backlog-${i}/rootfs`));
  for (let i = 0; i < paths.length; i += 100) await exec('btrfs', ['subvolume', 'delete', ...paths.slice(i, i + 100)]);
}
