import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DirBlobStore } from '@forkd/server';
import { createTestNode, run, type TestNode } from '@forkd/server/testing';
import { startMemoryHog } from './memory-hog.js';
import { summarize, type Summary } from './stats.js';
import { LiveRows } from './live-rows.js';
import { rowLine } from './row-line.js';

export interface TransferRow {
  name: string;
  unit: string;
  target?: string;
  summary: Summary;
}

/**
 * Snapshots leaving a node (issue 25): two nodes with their own pools (so
 * their templates differ, as two machines' would) share one directory blob
 * store. Migration of a paused 100 MB sandbox (export on A, import on B as
 * the sandbox, resume there), a fork of A's snapshot made on B, and the
 * bytes a further export of an idle sandbox adds to the store.
 */
export async function transferRows(quick: boolean): Promise<TransferRow[]> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-bench-blobs-'));
  const blobs = await DirBlobStore.open(dir);
  let a: TestNode | undefined;
  let b: TestNode | undefined;
  try {
    a = await createTestNode({ blobs });
    b = await createTestNode({ blobs });
    const runs = quick ? 1 : 5;
    const migrate: number[] = [];
    const fork: number[] = [];
    const further: number[] = [];
    const first: number[] = [];
    for (let i = 0; i < runs; i++) {
      const s = await a.manager.create({ memoryMb: 512 });
      await startMemoryHog(a.manager, s.id, 100);
      const snap0 = await a.manager.snapshot(s.id);
      first.push((await a.service.exportSnapshot(snap0.id)).bytesUploaded);
      const snap1 = await a.manager.snapshot(s.id);
      further.push((await a.service.exportSnapshot(snap1.id)).bytesUploaded);
      // Cross-node fork: the snapshot travels, then forks there.
      const t1 = performance.now();
      const imported = await b.service.importSnapshot((await a.service.exportSnapshot(snap1.id)).manifest);
      const [f] = await b.service.fork(imported.id, 1);
      await run(b.manager, f!.id, ['true']);
      fork.push(performance.now() - t1);
      await b.manager.delete(f!.id);
      // Migration of the paused sandbox.
      await a.manager.pause(s.id);
      const paused = (await a.service.timeline(s.id)).sort((x, y) => (x.createdAt < y.createdAt ? 1 : -1))[0]!;
      const t0 = performance.now();
      const exp = await a.service.exportSnapshot(paused.id);
      await b.service.importSnapshot(exp.manifest, { asSandbox: true });
      await b.service.resume(s.id);
      await run(b.manager, s.id, ['true']);
      migrate.push(performance.now() - t0);
      await a.manager.delete(s.id);
      await b.manager.delete(s.id);
    }
    const MB = 2 ** 20;
    const rows = new LiveRows<TransferRow>(rowLine);
    rows.push(
      { name: 'migration of a paused 100 MB sandbox between two nodes (export + import + resume + first exec)', unit: 'ms', target: 'p50 ≤ 2000', summary: summarize(migrate) },
      { name: 'fork of a snapshot onto another node (export + import + fork + first exec)', unit: 'ms', summary: summarize(fork) },
      { name: 'bytes a first export of a 100 MB sandbox adds to the blob store (the template included once)', unit: 'MB', summary: summarize(first.map((x) => x / MB)) },
      { name: 'bytes a further export of the idle sandbox adds', unit: 'MB', target: '< 5', summary: summarize(further.map((x) => x / MB)) },
    );
    return rows;
  } finally {
    await a?.dispose();
    await b?.dispose();
    await rm(dir, { recursive: true, force: true });
  }
}
