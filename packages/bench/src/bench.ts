import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { baseRootfsDir, criuPath, installPackages, loadConfig, REPO_ROOT } from '@forkd/server';
import { compareWithPodman, type Comparison } from './compare.js';
import { Podman } from './podman.js';
import { describeMachine, ratioText, renderCharts, renderMarkdown, type Machine } from './report.js';
import { createTestNode, run } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { cpuMeter, pinnedMemory, poolUsed } from './host-measures.js';
import { streamGapsAcrossSnapshots } from './stream-gap.js';
import { quotaCostRows } from './quota-cost.js';
import { cleanupBacklogRows } from './cleanup-backlog.js';
import { usernsCostRows } from './userns-cost.js';
import { codeInterpreterRows, e2bSdkRows } from './e2b-sdk.js';
import { egressProxyRows } from './egress-proxy.js';
import { timeProfileRows } from './time-profile.js';
import { leverRows } from './levers.js';
import { fmt, liveRows, type BenchRow } from './row-line.js';
import { densityRows } from './density.js';
import { transferRows } from './transfer.js';
import { dockerfileRows } from './dockerfile-build.js';
import { cliRows } from './cli-latency.js';
import { Sections } from './sections.js';

/** The sections of a whole run, in order (see Sections). */
const SECTIONS = ['core', 'levers', 'density', 'user namespaces', 'disk quotas', 'cleanup backlog', 'E2B SDK', 'code interpreter', 'egress proxy', 'transfers', 'Dockerfile builds', 'CLI', 'Podman side by side'];

/**
 * `npm run bench`: speed and memory of the sandbox core on this machine, then
 * the same operations side by side with Podman + CRIU (BENCHMARKS.md, SVG
 * charts in docs/bench), medians and p95. `--quick` only checks that every
 * measurement runs and writes its report under bench-results/.
 */
const quick = process.argv.includes('--quick');
const N = quick ? 3 : 40;

async function coreBench(): Promise<BenchRow[]> {
  const node = await createTestNode({ warmPool: 2 });
  const rows = liveRows();
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

    // Stateful operations on a sandbox holding ~100 MB of resident, incompressible memory.
    const big = await m.create({ memoryMb: 1024 });
    // SIGUSR1 makes it rewrite the next 10 MB of its buffer (memory changed between snapshots); /tmp/touched counts.
    const HOG = [
      'import os,time,signal',
      'b=bytearray(os.urandom(100*1024*1024))',
      'n=[0]',
      'def touch(*a):',
      '  o=(n[0]*10*2**20)%len(b); b[o:o+10*2**20]=os.urandom(10*2**20); n[0]+=1; open("/tmp/touched","w").write(str(n[0]))',
      'signal.signal(signal.SIGUSR1,touch)',
      "open('/tmp/ready','w').write('1')",
      'while True: time.sleep(1)',
    ].join('\n');
    (await m.spawn(big.id, { argv: ['python3', '-c', HOG], tag: 'hog' })).process.detach();
    for (let i = 0; i < 100; i++) {
      if ((await run(m, big.id, ['test', '-e', '/tmp/ready'])).exitCode === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const bigRss = (await m.usage(big.id)).memoryBytes;
    const freeze: number[] = [];
    const total: number[] = [];
    const added: number[] = [];
    const snaps: string[] = [];
    const M = quick ? 2 : 10;
    for (let i = 0; i < M; i++) {
      const used0 = await poolUsed(node.config.pool.mountPoint);
      const t0 = performance.now();
      const snap = await m.snapshot(big.id);
      total.push(performance.now() - t0);
      freeze.push(snap.frozenMs);
      snaps.push(snap.id);
      added.push((await poolUsed(node.config.pool.mountPoint)) - used0);
    }
    rows.push({ name: `snapshot freeze time (${Math.round(bigRss / 2 ** 20)} MB sandbox)`, unit: 'ms', target: 'p50 ≤ 30', summary: summarize(freeze) });
    rows.push({ name: 'snapshot total time', unit: 'ms', summary: summarize(total) });
    rows.push({ name: 'bytes added per snapshot (first one included)', unit: 'MB', summary: summarize(added.map((b) => b / 2 ** 20)) });
    rows.push({ name: 'bytes added per further snapshot', unit: 'MB', target: '< 10', summary: summarize(added.slice(1).map((b) => b / 2 ** 20)) });

    // Host CPU per snapshot (forkd, runc, criu, the action script, the Btrfs snapshot, the page store; not the sandbox).
    const meter = await cpuMeter();
    try {
      const freezeP50 = summarize(freeze).p50;
      const cpuIdle: number[] = [];
      const cpuChanged: number[] = [];
      const freezeChanged: number[] = [];
      for (let i = 0; i < M; i++) {
        const c0 = await meter.nanos();
        snaps.push((await m.snapshot(big.id)).id);
        cpuIdle.push(((await meter.nanos()) - c0) / 1e6);
      }
      for (let i = 0; i < M; i++) {
        await run(m, big.id, ['pkill', '-USR1', '-f', 'signal.SIGUSR1']);
        for (let t = 0; t < 100 && (await run(m, big.id, ['cat', '/tmp/touched'])).stdout.trim() !== String(i + 1); t++) await new Promise((r) => setTimeout(r, 20));
        const c0 = await meter.nanos();
        const snap = await m.snapshot(big.id);
        cpuChanged.push(((await meter.nanos()) - c0) / 1e6);
        freezeChanged.push(snap.frozenMs);
        snaps.push(snap.id);
      }
      rows.push({ name: `host CPU per snapshot, idle (${Math.round(bigRss / 2 ** 20)} MB sandbox; ${meter.source})`, unit: 'ms', target: `p50 ≤ 50 (and ≤ freeze, p50 ${freezeP50.toFixed(0)} ms)`, summary: summarize(cpuIdle) });
      rows.push({ name: 'host CPU per snapshot, 10 MB changed since the previous one', unit: 'ms', target: `p50 ≤ 50 (and ≤ freeze, p50 ${summarize(freezeChanged).p50.toFixed(0)} ms)`, summary: summarize(cpuChanged) });
    } finally {
      await meter.close();
    }
    rows.push({ name: 'longest gap an exec stream sees across a snapshot', unit: 'ms', target: 'p50 ≤ 50', summary: summarize(await streamGapsAcrossSnapshots(m, big.id, M)) });

    const forkMs: number[] = [];
    for (let i = 0; i < M; i++) {
      const t0 = performance.now();
      const [f] = await m.fork(snaps[0]!);
      forkMs.push(performance.now() - t0);
      await m.delete(f!.id);
    }
    rows.push({ name: 'fork of a snapshot to running (1 way)', unit: 'ms', target: 'p50 ≤ 30', summary: summarize(forkMs) });

    const ten: number[] = [];
    for (let i = 0; i < (quick ? 1 : 3); i++) {
      const t0 = performance.now();
      const fs = await m.fork(snaps[0]!, 10);
      ten.push(performance.now() - t0);
      await Promise.all(fs.map((f) => m.delete(f.id)));
    }
    rows.push({ name: '10-way fork, total', unit: 'ms', target: '≤ 1000', summary: summarize(ten) });

    // A pause keeps its frozen tree for the hot window (resume = thaw); a hibernation (forkd's own pause) does not.
    for (const [how, pause] of [['pause', (id: string) => m.pause(id)], ['hibernation', (id: string) => m.hibernate(id)]] as const) {
      const pauseMs: number[] = [];
      const resumeMs: number[] = [];
      for (let i = 0; i < M; i++) {
        let t0 = performance.now();
        await pause(big.id);
        pauseMs.push(performance.now() - t0);
        t0 = performance.now();
        await m.resume(big.id);
        resumeMs.push(performance.now() - t0);
      }
      rows.push({ name: `${how} (snapshot + ${how === 'pause' ? 'freeze kept' : 'stop'})`, unit: 'ms', summary: summarize(pauseMs) });
      rows.push({ name: how === 'pause' ? 'resume after pause, within the hot window (thaw)' : 'resume after hibernation (restore from the snapshot)', unit: 'ms', target: 'p50 ≤ 30', summary: summarize(resumeMs) });
    }

    // Each rewind starts on a settled node: the previous one's background work
    // (release of the instance it left, store of that state's images) is done.
    const rewindMs: number[] = [];
    for (let i = 0; i < M; i++) {
      await m.settled();
      const t0 = performance.now();
      await m.rewind(big.id, snaps[i % snaps.length]!);
      rewindMs.push(performance.now() - t0);
    }
    rows.push({ name: 'rewind (state left frozen and kept + restore; its dump after the answer)', unit: 'ms', target: 'p50 ≤ 60', summary: summarize(rewindMs) });
    await timeProfileRows(m, big.id, snaps[0]!, quick ? 2 : 5, rows);
    await m.delete(big.id);
  } finally {
    await node.dispose();
  }
  return [...rows];
}

/** The same operations on Podman + CRIU, in the same run, on the same base root filesystem. */
async function podmanBench(): Promise<{ rows: Comparison[]; podmanVersion: string }> {
  const config = loadConfig();
  await installPackages(['podman'], (d) => console.error(d));
  const tmp = await mkdtemp(join(tmpdir(), 'forkd-bench-'));
  const podman = await Podman.withCriu(criuPath(config), join(tmp, 'bin'));
  await podman.importRootfs(baseRootfsDir(config));
  const node = await createTestNode({ warmPool: 2 });
  try {
    return { rows: await compareWithPodman(node, podman, { quick, tmp }), podmanVersion: await podman.version() };
  } finally {
    await node.dispose();
    await rm(tmp, { recursive: true, force: true });
  }
}

/** `--report`: renders BENCHMARKS.md and the charts again from the last run's results. */
async function reportOnly(): Promise<void> {
  const outDir = join(REPO_ROOT, 'bench-results');
  const core = JSON.parse(await readFile(join(outDir, 'core.json'), 'utf8')) as { rows: BenchRow[] };
  const cmp = JSON.parse(await readFile(join(outDir, 'compare.json'), 'utf8')) as { date: string; quick: boolean; machine: Machine; rows: Comparison[] };
  await writeReport(cmp.machine, cmp.rows, core.rows, cmp.date, cmp.quick);
}

async function writeReport(machine: Machine, compared: Comparison[], rows: BenchRow[], date: string, isQuick: boolean): Promise<void> {
  const outDir = join(REPO_ROOT, 'bench-results');
  // A quick run only checks that everything runs: it never replaces the published results.
  const chartDir = isQuick ? outDir : join(REPO_ROOT, 'docs/bench');
  await mkdir(chartDir, { recursive: true });
  const charts = renderCharts(compared);
  for (const c of charts) await writeFile(join(chartDir, c.file), c.svg);
  const md = renderMarkdown(machine, compared, rows, charts.map((c) => c.file), date);
  await writeFile(isQuick ? join(outDir, 'BENCHMARKS.quick.md') : join(REPO_ROOT, 'BENCHMARKS.md'), md);
}

/** `--density-only [--n N] [--minutes M] [--concurrency C] [--cleanup-minutes M]`: only the density rows (they take an hour at 10,000). */
function argValue(name: string): number | undefined {
  const i = process.argv.indexOf(name);
  const v = i >= 0 ? Number(process.argv[i + 1]) : Number.NaN;
  return Number.isFinite(v) && v > 0 ? v : undefined;
}

async function density(): Promise<BenchRow[]> {
  return densityRows({ quick, n: argValue('--n'), minutes: argValue('--minutes'), concurrency: argValue('--concurrency'), cleanupMinutes: argValue('--cleanup-minutes') });
}

async function main(): Promise<void> {
  if (process.argv.includes('--report')) return reportOnly();
  if (process.argv.includes('--density-only')) {
    await density();
    return;
  }
  if (process.argv.includes('--code-interpreter-only')) {
    await codeInterpreterRows(quick);
    return;
  }
  if (process.argv.includes('--dockerfile-only')) {
    await dockerfileRows(quick);
    return;
  }
  if (process.argv.includes('--transfer-only')) {
    await transferRows(quick);
    return;
  }
  if (process.argv.includes('--levers-only')) {
    // `--lever TEXT`: only the levers whose name holds TEXT.
    const i = process.argv.indexOf('--lever');
    await leverRows(quick, i >= 0 ? process.argv[i + 1] : undefined);
    return;
  }
  if (process.argv.includes('--cli-only')) {
    await cliRows(quick);
    return;
  }
  if (process.argv.includes('--podman-only')) {
    // The side-by-side rows alone, printed (the report is left as it is).
    const { rows } = await podmanBench();
    for (const r of rows) console.log(`${r.name}: forkd p50 ${fmt(summarize(r.forkd).p50)} ${r.unit}${r.podman ? `, Podman p50 ${fmt(summarize(r.podman).p50)} (${ratioText(r)})` : ''}`);
    return;
  }
  const date = new Date().toISOString();
  const s = new Sections(quick ? 'bench-quick' : 'bench', SECTIONS);
  const rows = [
    ...(await s.run('core', coreBench)),
    ...(await s.run('levers', () => leverRows(quick))),
    ...(await s.run('density', density)),
    ...(await s.run('user namespaces', () => usernsCostRows(quick))),
    ...(await s.run('disk quotas', () => quotaCostRows(baseRootfsDir(loadConfig()), quick))),
    ...(await s.run('cleanup backlog', () => cleanupBacklogRows(quick))),
    ...(await s.run('E2B SDK', () => e2bSdkRows(quick))),
    ...(await s.run('code interpreter', () => codeInterpreterRows(quick))),
    ...(await s.run('egress proxy', () => egressProxyRows(quick))),
    ...(await s.run('transfers', () => transferRows(quick))),
    ...(await s.run('Dockerfile builds', () => dockerfileRows(quick))),
    ...(await s.run('CLI', () => cliRows(quick))),
  ];
  const lines = ['| measurement | unit | n | p50 | p95 | min | max | target |', '|---|---|---|---|---|---|---|---|'];
  for (const r of rows) lines.push(`| ${r.name} | ${r.unit} | ${r.summary.n} | ${fmt(r.summary.p50)} | ${fmt(r.summary.p95)} | ${fmt(r.summary.min)} | ${fmt(r.summary.max)} | ${r.target ?? ''} |`);
  console.log(lines.join('\n'));
  const outDir = join(REPO_ROOT, 'bench-results');
  await mkdir(outDir, { recursive: true });
  await writeFile(join(outDir, 'core.json'), JSON.stringify({ date, quick, rows }, null, 2));

  const { rows: compared, podmanVersion } = await s.run('Podman side by side', podmanBench);
  s.finish();
  const machine = await describeMachine(criuPath(loadConfig()), podmanVersion);
  await writeFile(join(outDir, 'compare.json'), JSON.stringify({ date, quick, machine, rows: compared }, null, 2));
  await writeReport(machine, compared, rows, date, quick);
  for (const r of compared) console.log(`${r.name}: forkd p50 ${fmt(summarize(r.forkd).p50)} ${r.unit}${r.podman ? `, Podman p50 ${fmt(summarize(r.podman).p50)} (${ratioText(r)})` : ''}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
