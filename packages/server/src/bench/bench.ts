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

async function memAvailable(): Promise<number> {
  const m = /MemAvailable:\s+(\d+) kB/.exec(await readFile('/proc/meminfo', 'utf8'));
  return Number(m?.[1] ?? 0) * 1024;
}

async function main(): Promise<void> {
  const node = await createTestNode();
  const rows: Row[] = [];
  const m = node.manager;
  try {
    // Warm-up (page cache, cgroup parent).
    await m.delete((await m.create({})).id);

    const createExec: number[] = [];
    const createOnly: number[] = [];
    for (let i = 0; i < N; i++) {
      const t0 = performance.now();
      const s = await m.create({});
      const t1 = performance.now();
      await run(m, s.id, ['true']);
      createExec.push(performance.now() - t0);
      createOnly.push(t1 - t0);
      await m.delete(s.id);
    }
    rows.push({ name: 'create → first exec completed', unit: 'ms', target: 'p50 ≤ 50', summary: summarize(createExec) });
    rows.push({ name: 'create (ready)', unit: 'ms', summary: summarize(createOnly) });

    const s = await m.create({});
    const rtt: number[] = [];
    for (let i = 0; i < N * 5; i++) {
      const t0 = performance.now();
      await run(m, s.id, ['true']);
      rtt.push(performance.now() - t0);
    }
    rows.push({ name: 'exec round trip of `true`', unit: 'ms', target: 'p50 ≤ 5', summary: summarize(rtt) });

    const rss: number[] = [];
    for (let i = 0; i < 5; i++) rss.push((await m.guest(s.id).info()).rssBytes / 1024 / 1024);
    rows.push({ name: 'guest agent RSS', unit: 'MB', target: '≤ 2', summary: summarize(rss) });
    await m.delete(s.id);

    const idleN = quick ? 3 : 20;
    const before = await memAvailable();
    const idle = await Promise.all(Array.from({ length: idleN }, () => m.create({})));
    await new Promise((r) => setTimeout(r, 2000));
    const afterMem = await memAvailable();
    const cg: number[] = [];
    for (const sb of idle) cg.push((await m.usage(sb.id)).memoryBytes / 1024 / 1024);
    rows.push({ name: `idle sandbox host memory (MemAvailable drop / ${idleN})`, unit: 'MB', target: '≤ 5', summary: summarize([(before - afterMem) / idleN / 1024 / 1024]) });
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
