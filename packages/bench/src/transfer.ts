import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirBlobStore } from '@forkd/server';
import { createTestNode, run, type TestNode } from '@forkd/server/testing';
import { startMemoryHog } from './memory-hog.js';
import { summarize } from './stats.js';
import { liveRows, printSample, type BenchRow } from './row-line.js';
import { newestFirst } from '@forkd/server';

/**
 * Snapshots leaving a node (issue 25): two nodes with their own pools (so
 * their templates differ, as two machines' would) share one directory blob
 * store. Migration of a paused 100 MB sandbox to a node that holds none of
 * it (export on A, import on B as the sandbox, resume there); the move back
 * of the running sandbox as the fleet makes it (its newest snapshot copied
 * ahead while it runs, then pause → export → import → resume, both ends
 * comparing with and copying from that snapshot): its downtime and the
 * whole; a fork of A's snapshot made on B; and the bytes a further export
 * of an idle sandbox adds to the store.
 */
export async function transferRows(quick: boolean): Promise<BenchRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-bench-blobs-'));
  const blobs = await DirBlobStore.open(dir);
  let a: TestNode | undefined;
  let b: TestNode | undefined;
  try {
    a = await createTestNode({ blobs });
    b = await createTestNode({ blobs });
    const runs = quick ? 1 : 5;
    const MB = 2 ** 20;
    const migrate: number[] = [];
    const downtime: number[] = [];
    const move: number[] = [];
    const fork: number[] = [];
    const further: number[] = [];
    const first: number[] = [];
    for (let i = 0; i < runs; i++) {
      const s = await a.manager.create({ memoryMb: 512 });
      await startMemoryHog(a.manager, s.id, 100);
      const snap0 = await a.manager.snapshot(s.id);
      first.push((await a.service.exportSnapshot(snap0.id)).bytesUploaded);
      printSample('bytes a first export adds', first.at(-1)! / MB, 'MB');
      // As the fleet's export loop keeps it: the sandbox's newest snapshot is in the store.
      const snap1 = await a.manager.snapshot(s.id);
      further.push((await a.service.exportSnapshot(snap1.id)).bytesUploaded);
      printSample('bytes a further export adds', further.at(-1)! / MB, 'MB');
      fork.push(await crossNodeFork(a, b, snap1.id));
      printSample('fork onto another node', fork.at(-1)!, 'ms');
      // Migration of the paused sandbox to a node that holds none of it.
      await a.manager.pause(s.id);
      const t0 = performance.now();
      await moveOver(a, b, s.id);
      migrate.push(performance.now() - t0);
      printSample('migration of the paused sandbox', migrate.at(-1)!, 'ms');
      await a.manager.delete(s.id);
      // And back while it runs, as `forkd nodes migrate` does: its newest snapshot copied ahead, then pause → move.
      const t1 = performance.now();
      const [newest] = newestFirst(await b.service.timeline(s.id));
      await a.service.importSnapshot((await b.service.exportSnapshot(newest!.id)).manifest);
      const t2 = performance.now();
      await b.manager.pause(s.id);
      await moveOver(b, a, s.id);
      downtime.push(performance.now() - t2);
      move.push(performance.now() - t1);
      printSample('move of the running sandbox: downtime', downtime.at(-1)!, 'ms');
      printSample('move of the running sandbox: whole', move.at(-1)!, 'ms');
      await b.manager.delete(s.id);
      await a.manager.delete(s.id);
    }
    const rows = liveRows();
    rows.push(
      { name: 'migration of a paused 100 MB sandbox to a node holding none of it (export + import + resume + first exec)', unit: 'ms', target: 'p50 ≤ 2000', summary: summarize(migrate) },
      { name: 'move of a running 100 MB sandbox: its downtime (pause → export → import → running on the target; newest snapshot copied ahead)', unit: 'ms', summary: summarize(downtime) },
      { name: 'move of a running 100 MB sandbox: the whole move (copy ahead + downtime)', unit: 'ms', summary: summarize(move) },
      { name: 'fork of a snapshot onto another node (export + import + fork + first exec)', unit: 'ms', summary: summarize(fork) },
      { name: 'bytes a first export of a 100 MB sandbox adds to the blob store (the template included once)', unit: 'MB', summary: summarize(first.map((x) => x / MB)) },
      { name: 'bytes a further export of the idle sandbox adds', unit: 'MB', target: '< 5', summary: summarize(further.map((x) => x / MB)) },
    );
    return [...rows];
  } finally {
    await a?.dispose();
    await b?.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The paused sandbox's newest snapshot exported on `from`, imported on `to` as the sandbox, resumed there, and a first exec. */
async function moveOver(from: TestNode, to: TestNode, id: string): Promise<void> {
  const [paused] = newestFirst(await from.service.timeline(id));
  const exp = await from.service.exportSnapshot(paused!.id);
  await to.service.importSnapshot(exp.manifest, { asSandbox: true });
  await to.service.resume(id);
  await run(to.manager, id, ['true']);
}

/** A snapshot of `a` forked on `b` (export + import + fork + first exec), in ms; b keeps nothing of it. */
async function crossNodeFork(a: TestNode, b: TestNode, snapId: string): Promise<number> {
  const t0 = performance.now();
  const imported = await b.service.importSnapshot((await a.service.exportSnapshot(snapId)).manifest);
  const [f] = await b.service.fork(imported.id, 1);
  await run(b.manager, f!.id, ['true']);
  const ms = performance.now() - t0;
  await b.manager.delete(f!.id);
  await b.service.deleteSnapshot(imported.id);
  return ms;
}
