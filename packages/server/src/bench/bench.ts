import { readFile, writeFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO_ROOT } from '../shared/config.js';
import { createTestNode } from '../testing/test-node.js';
import { run } from '../testing/helpers.js';
import { summarize, type Summary } from './stats.js';

/**
 * `npm run bench`: speed and memory of the sandbox core on this machine,
 * medians and p95. `--quick` only checks that every measurement runs.
 */
const quick = process.argv.includes('--quick');
const N = quick ? 3 : 40;

interface Row {
  name: string;
  unit: string;
  target?: string;
  summary: Summary;
}

/** Host memory that is not page cache: what idle sandboxes really pin. */
async function pinnedMemory(): Promise<number> {
  const info = await readFile('/proc/meminfo', 'utf8');
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(info)?.[1] ?? 0);
  return (kb('AnonPages') + kb('KernelStack') + kb('PageTables') + kb('SUnreclaim') + kb('Shmem')) * 1024;
}

async function main(): Promise<void> {
  const node = await createTestNode({ warmPool: 2 });
  const rows: Row[] = [];
  const m = node.manager;
  try {
    // Warm-up (page cache, cgroup parent).
    await m.delete((await m.create({})).id);
    await m.warmPool.settled();

    // Default configuration: a warm pool of 2, refilled between creates (interactive use).
    const warm: number[] = [];
    for (let i = 0; i < N; i++) {
      await m.warmPool.settled();
      const t0 = performance.now();
      const s = await m.create({});
      await run(m, s.id, ['true']);
      warm.push(performance.now() - t0);
      await m.delete(s.id);
    }
    rows.push({ name: 'create → first exec completed (warm pool)', unit: 'ms', target: 'p50 ≤ 50', summary: summarize(warm) });

    // Back-to-back creates drain the pool: this is the cold path (btrfs snapshot + runc start + guest ready).
    await m.close();
    const cold: number[] = [];
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      const s = await m.create({});
      await run(m, s.id, ['true']);
      cold.push(performance.now() - t0);
      await m.delete(s.id);
    }
    rows.push({ name: 'create → first exec completed (cold, no pool)', unit: 'ms', summary: summarize(cold) });

    const s = await m.create({});
    const rtt: number[] = [];
    for (let i = 0; i < N * 5; i++) {
      const t0 = performance.now();
      await run(m, s.id, ['true']);
      rtt.push(performance.now() - t0);
    }
    rows.push({ name: 'exec round trip of `true`', unit: 'ms', target: 'p50 ≤ 5', summary: summarize(rtt) });

    const rss: number[] = [];
    for (let i = 0; i < 5; i++) rss.push((await (await m.guest(s.id)).info()).rssBytes / 1024 / 1024);
    rows.push({ name: 'guest agent RSS', unit: 'MB', target: '≤ 2', summary: summarize(rss) });
    await m.delete(s.id);

    const idleN = quick ? 3 : 20;
    const before = await pinnedMemory();
    const idle = await Promise.all(Array.from({ length: idleN }, () => m.create({})));
    await new Promise((r) => setTimeout(r, 2000));
    const afterMem = await pinnedMemory();
    const cg: number[] = [];
    for (const sb of idle) cg.push((await m.usage(sb.id)).memoryBytes / 1024 / 1024);
    rows.push({ name: `idle sandbox host memory (non-cache memory growth / ${idleN})`, unit: 'MB', target: '≤ 5', summary: summarize([(afterMem - before) / idleN / 1024 / 1024]) });
    rows.push({ name: 'idle sandbox cgroup memory', unit: 'MB', summary: summarize(cg) });
    await Promise.all(idle.map((sb) => m.delete(sb.id)));
  } finally {
    await node.dispose();
  }

  const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '-');
  const lines = ['| measurement | unit | n | p50 | p95 | min | max | target |', '|---|---|---|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.name} | ${r.unit} | ${r.summary.n} | ${fmt(r.summary.p50)} | ${fmt(r.summary.p95)} | ${fmt(r.summary.min)} | ${fmt(r.summary.max)} | ${r.target ?? ''} |`);
  console.log(lines.join('\n'));
  const outDir = join(REPO_ROOT, 'bench-results');
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'core.json'), JSON.stringify({ date: new Date().toISOString(), quick, rows }, null, 2));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
