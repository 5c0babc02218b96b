import { createTestNode, run, waitFor, type TestNode } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { liveRows, printSample, type BenchRow } from './row-line.js';

/** A sandbox with ~100 MB resident (the size the core rows use for snapshots and restores). */
const HOG = "import time\nb=bytearray(100*1024*1024)\nfor i in range(0,len(b),4096): b[i]=1\nopen('/tmp/ready','w').write('1')\nwhile True: time.sleep(1)";

/**
 * What isolation costs (issue: user namespaces): the lifecycle operations
 * with user namespaces off and on, on two nodes of the same run, in
 * alternating rounds so that the machine's drift falls on both alike.
 * With them on, every root is an idmapped mount, the network namespace is
 * runc's and adopted, images are bound within the range's reach and lazy
 * restores get their userfaultfd through forkd-uffd-broker.
 */
export async function usernsCostRows(quick: boolean): Promise<BenchRow[]> {
  const rounds = quick ? 2 : 10;
  const modes = ['off', 'on'] as const;
  const t: Record<(typeof modes)[number], Record<string, number[]>> = { off: {}, on: {} };
  const nodes: Partial<Record<(typeof modes)[number], { node: TestNode; big: string; snap: string }>> = {};
  try {
    for (const mode of modes) {
      const saved = process.env.FORKD_USERNS;
      process.env.FORKD_USERNS = mode === 'on' ? '1' : '0';
      try {
        const node = await createTestNode();
        nodes[mode] = { node, big: '', snap: '' };
        const big = (await node.manager.create({ memoryMb: 512 })).id;
        (await node.manager.spawn(big, { argv: ['python3', '-c', HOG], tag: 'hog' })).process.detach();
        await waitFor(async () => (await run(node.manager, big, ['test', '-e', '/tmp/ready'])).exitCode === 0, 20_000, 'the 100 MB process');
        nodes[mode] = { node, big, snap: (await node.manager.snapshot(big)).id };
      } finally {
        if (saved === undefined) delete process.env.FORKD_USERNS;
        else process.env.FORKD_USERNS = saved;
      }
    }
    const time = async (mode: (typeof modes)[number], what: string, fn: () => Promise<unknown>) => {
      const t0 = performance.now();
      await fn();
      const ms = performance.now() - t0;
      (t[mode][what] ??= []).push(ms);
      printSample(`${what}, user namespaces ${mode}`, ms, 'ms');
    };
    for (let i = 0; i < rounds; i++) {
      for (const mode of modes) {
        const { node, big, snap } = nodes[mode]!;
        const m = node.manager;
        let cold = '';
        await time(mode, 'cold create → first exec', async () => {
          cold = (await m.create({})).id;
          await run(m, cold, ['true']);
        });
        await m.delete(cold);
        let s = '';
        await time(mode, 'snapshot, 100 MB resident', async () => (s = (await m.snapshot(big)).id));
        await m.deleteSnapshot(s);
        let f = '';
        await time(mode, 'fork of a snapshot to running, 100 MB resident', async () => (f = (await m.fork(snap))[0]!.id));
        await m.delete(f);
        await m.pause(big);
        await time(mode, 'resume to running, 100 MB resident', () => m.resume(big));
        await m.settled();
        await time(mode, 'rewind, 100 MB resident', () => m.rewind(big, snap));
        await m.settled();
      }
    }
  } finally {
    for (const n of Object.values(nodes)) await n?.node.dispose();
  }
  const rows = liveRows();
  for (const what of Object.keys(t.off)) {
    const off = summarize(t.off[what]!);
    rows.push({ name: `${what}, user namespaces off`, unit: 'ms', summary: off });
    rows.push({ name: `${what}, user namespaces on`, unit: 'ms', target: `p50 ≤ off × 1.1 (${(off.p50 * 1.1).toFixed(0)})`, summary: summarize(t.on[what]!) });
  }
  return [...rows];
}
