import { readdir, readFile } from 'node:fs/promises';
import { totalmem } from 'node:os';
import { join } from 'node:path';
import { exec } from '@forkd/server';
import { createTestNode, run, type TestNode } from '@forkd/server/testing';
import { pinnedMemory } from './host-measures.js';
import { summarize } from './stats.js';
import type { BenchRow } from './row-line.js';

export interface DensityOptions {
  quick: boolean;
  /** Sandboxes to start (default 10,000; 20 with quick). */
  n?: number;
  /** Creates stop at this many minutes, whatever N was reached (default 60; 5 with quick). */
  minutes?: number;
  /** Creates at once (default 4: this is a 2-core machine). */
  concurrency?: number;
  /** Creates stop when the host's MemAvailable falls below this (MB; default 3072): the machine is shared. */
  minFreeMb?: number;
  /** How long the daemon's idle CPU is measured (ms; default 120 s, 15 s with quick). */
  idleWindowMs?: number;
  /** How long the pool's cleanup after the deletes is waited for (minutes; default 15). */
  cleanupMinutes?: number;
  print?: (line: string) => void;
}

/** Small enough that 10,000 fit the node's admission once overcommit is raised for the run (see densityRows). */
const MEMORY_MB = 64;
const DISK_MB = 64;
/** A day's lifetime: every sandbox has a policy timer armed that does not fire during the run. */
const LIFETIME_S = 86_400;

/**
 * Density: starts N idle sandboxes for real (not an extrapolation), then
 * reports host memory per sandbox, the create time of the last 100 against
 * the first 100, exec latency at N against at 1, the list time at N, the
 * daemon's idle CPU per sandbox per minute (policy timers and exit watches
 * running as in `forkd serve`), and the time to delete them all and for the
 * pool's cleaner to finish. Each result is printed as it is known. Creates
 * stop early at a deadline, when the host runs low on memory, or at the first
 * failure: the N reached and why are reported.
 */
export async function densityRows(o: DensityOptions): Promise<BenchRow[]> {
  const print = o.print ?? ((l: string) => console.log(l));
  const target = o.n ?? (o.quick ? 20 : 10_000);
  const hostMb = totalmem() / 2 ** 20;
  print(`density: target ${target} sandboxes of ${MEMORY_MB} MB; host limits ${JSON.stringify(await hostLimits())}`);
  // Each root holds its own copy of the guest agent (~0.7 MB): 10,000 need more than the tests' 16 GB pool (a sparse loop file).
  const poolSizeGb = Math.max(16, Math.ceil(target / 250));
  const node = await createTestNode({
    poolSizeGb,
    config: {
      // Admission counts limits, not use: N × 64 MB must fit under overcommit × host memory, N × 64 MB of quota under the pool's.
      memoryOvercommit: Math.max(4, Math.ceil((target * MEMORY_MB) / hostMb) + 1),
      diskOvercommit: Math.max(64, Math.ceil((target * DISK_MB) / (poolSizeGb * 1024)) + 1),
    },
  });
  const rows: BenchRow[] = [];
  const row = (r: BenchRow, shown: string) => {
    rows.push(r);
    print(`density: ${r.name}: ${shown}`);
  };
  try {
    await measure(node, target, o, rows, row, print);
  } finally {
    await node.dispose().catch((err: unknown) => print(`density: dispose failed: ${String(err)}`));
  }
  return rows;
}

type RowSink = (r: BenchRow, shown: string) => void;

async function measure(node: TestNode, target: number, o: DensityOptions, rows: BenchRow[], row: RowSink, print: (l: string) => void): Promise<void> {
  const m = node.manager;
  const concurrency = o.concurrency ?? 4;
  const deadline = Date.now() + (o.minutes ?? (o.quick ? 5 : 60)) * 60_000;
  const minFreeMb = o.minFreeMb ?? 3072;
  const req = { memoryMb: MEMORY_MB, diskMb: DISK_MB, idleTimeoutSeconds: 0, snapshotIntervalSeconds: 0, timeoutSeconds: LIFETIME_S };
  // Warm-up: the cgroup parent, page cache of the template.
  await m.delete((await m.create(req)).id);
  const policy = await node.startPolicy();
  const windowMs = o.idleWindowMs ?? (o.quick ? 15_000 : 120_000);
  // The node's fixed idle cost (the quota keeper's poll, …), once the warm-up's background work is done.
  await m.settled();
  await new Promise((r) => setTimeout(r, 5000));
  const idle0 = await idleCpuMs(windowMs);
  row({ name: 'daemon idle CPU per minute with no sandbox', unit: 'ms', summary: summarize([idle0]) }, `${fmt(idle0)} ms`);
  const memBefore = await pinnedMemory();
  const rssBefore = process.memoryUsage().rss;

  const ids: string[] = [];
  const createMs: number[] = [];
  const first = await timedCreate(m, req, createMs);
  ids.push(first);
  const exec1 = await execTimes(m, [first], o.quick ? 20 : 100);
  row({ name: 'exec round trip of `true` with 1 sandbox', unit: 'ms', summary: summarize(exec1) }, `p50 ${fmt(summarize(exec1).p50)} ms`);

  const t0 = Date.now();
  let stop = '';
  const worker = async () => {
    while (!stop && ids.length < target) {
      if (Date.now() > deadline) stop ||= `deadline (${Math.round((Date.now() - t0) / 60_000)} min of creates)`;
      const free = await memAvailableMb();
      if (free < minFreeMb) stop ||= `host MemAvailable ${Math.round(free)} MB < ${minFreeMb} MB`;
      if (stop) return;
      try {
        ids.push(await timedCreate(m, req, createMs));
      } catch (err) {
        stop ||= `create #${ids.length + 1} failed: ${(err as Error).message.slice(0, 300)}`;
        return;
      }
      if (ids.length % 100 === 0) {
        const last = summarize(createMs.slice(-100)).p50;
        const fds = (await readdir('/proc/self/fd')).length;
        print(`density: ${ids.length} running, last 100 creates p50 ${fmt(last)} ms, MemAvailable ${Math.round(free)} MB, daemon fds ${fds}, ${Math.round((Date.now() - t0) / 1000)} s`);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  const n = ids.length;
  row({ name: `sandboxes started (target ${target})`, unit: 'count', summary: summarize([n]) }, `${n}${stop ? ` — stopped: ${stop}` : ''}`);

  await new Promise((r) => setTimeout(r, 10_000));
  const memAfter = await pinnedMemory();
  const perSandbox = (memAfter - memBefore) / n / 2 ** 20;
  // Host-wide: every other process on the machine moves it too, which small N cannot outweigh (it has shown negative values).
  row({ name: `host memory per idle sandbox (host non-cache growth / ${n})`, unit: 'MB', target: '≤ 5', summary: summarize([perSandbox]) }, `${fmt(perSandbox)} MB`);
  const rss = (process.memoryUsage().rss - rssBefore) / n / 2 ** 20;
  row({ name: `daemon memory per idle sandbox (its RSS growth / ${n})`, unit: 'MB', summary: summarize([rss]) }, `${fmt(rss)} MB`);
  const cg = (await cgroupMemory(node.config.cgroupParent)) / n / 2 ** 20;
  row({ name: `sandbox cgroup memory per idle sandbox (parent cgroup / ${n})`, unit: 'MB', summary: summarize([cg]) }, `${fmt(cg)} MB`);

  const firstC = summarize(createMs.slice(0, 100));
  const lastC = summarize(createMs.slice(-100));
  row({ name: `create (${concurrency} at once), first 100`, unit: 'ms', summary: firstC }, `p50 ${fmt(firstC.p50)} ms`);
  row({ name: `create (${concurrency} at once), last 100 (at ${n})`, unit: 'ms', summary: lastC }, `p50 ${fmt(lastC.p50)} ms`);
  row({ name: 'create p50, last 100 / first 100', unit: '×', target: '≤ 1.5', summary: summarize([lastC.p50 / firstC.p50]) }, `${fmt(lastC.p50 / firstC.p50)}×`);

  // As at 1: the same sandbox, many times. Then one exec each into sandboxes across the whole set, each
  // after an untimed first one (a first connection checks the agent's directory: one process).
  const execN = await execTimes(m, [first], o.quick ? 20 : 100);
  const e1 = summarize(exec1).p50;
  const eN = summarize(execN).p50;
  row({ name: `exec round trip of \`true\` with ${n} sandboxes`, unit: 'ms', summary: summarize(execN) }, `p50 ${fmt(eN)} ms`);
  row({ name: `exec p50 at ${n} / at 1`, unit: '×', target: '≤ 1.5', summary: summarize([eN / e1]) }, `${fmt(eN / e1)}×`);
  const spread = Array.from({ length: o.quick ? 20 : 100 }, (_, i) => ids[Math.floor((i * n) / (o.quick ? 20 : 100))]!);
  await execTimes(m, spread, 1);
  const execSpread = summarize(await execTimes(m, spread, 1));
  row({ name: `exec round trip of \`true\`, one each into ${spread.length} sandboxes across the ${n}`, unit: 'ms', summary: execSpread }, `p50 ${fmt(execSpread.p50)} ms`);

  const list: number[] = [];
  for (let i = 0; i < 5; i++) {
    const l0 = performance.now();
    const all = await node.service.list();
    list.push(performance.now() - l0);
    if (all.length < n) print(`density: list returned ${all.length} of ${n}`);
  }
  row({ name: `list of ${n} sandboxes (node contract)`, unit: 'ms', summary: summarize(list) }, `p50 ${fmt(summarize(list).p50)} ms`);

  await policy.settled();
  // Exact disk limits are set in the background after each create: not idle yet.
  await m.settled();
  await new Promise((r) => setTimeout(r, 5000));
  const idleN = await idleCpuMs(windowMs);
  // All of it counted against the sandboxes (an upper bound: the fixed cost is in it too).
  const idle = idleN / n;
  row(
    { name: `daemon idle CPU per sandbox per minute (${n} sandboxes, ${policy.armed} policy timers; all its idle CPU / N)`, unit: 'ms', target: '≤ 0.1', summary: summarize([idle]) },
    `${idle.toFixed(4)} ms (${fmt(idleN)} ms of CPU per minute in all, ${fmt(idle0)} with none; exit watches on ${ids.filter((id) => policy.watched(id)).length} of ${n})`,
  );

  await deleteAll(node, ids, concurrency, (o.cleanupMinutes ?? 15) * 60_000, row);
}

async function deleteAll(node: TestNode, ids: string[], concurrency: number, cleanupMaxMs: number, row: RowSink): Promise<void> {
  const n = ids.length;
  const queue = [...ids];
  const d0 = performance.now();
  let failed = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let id = queue.shift(); id !== undefined; id = queue.shift()) await node.manager.delete(id).catch(() => failed++);
    }),
  );
  const delS = (performance.now() - d0) / 1000;
  row({ name: `delete all ${n} (${concurrency} at once)`, unit: 's', summary: summarize([delS]) }, `${fmt(delS)} s${failed ? `, ${failed} failed` : ''}`);
  const c0 = performance.now();
  let waiting = await deletedSubvolumes(node.config.pool.mountPoint);
  const first = waiting;
  while (waiting > 0 && performance.now() - c0 < cleanupMaxMs) {
    await new Promise((r) => setTimeout(r, 2000));
    waiting = await deletedSubvolumes(node.config.pool.mountPoint);
  }
  const cleanS = (performance.now() - c0) / 1000;
  row({ name: `pool cleanup after the deletes (${first} deleted subvolumes waiting at the end)`, unit: 's', summary: summarize([cleanS]) }, `${fmt(cleanS)} s${waiting ? `, ${waiting} still waiting` : ''}`);
}

async function timedCreate(m: TestNode['manager'], req: object, out: number[]): Promise<string> {
  const t0 = performance.now();
  const s = await m.create(req);
  out.push(performance.now() - t0);
  return s.id;
}

async function execTimes(m: TestNode['manager'], ids: string[], each: number): Promise<number[]> {
  const out: number[] = [];
  for (const id of ids) {
    for (let i = 0; i < each; i++) {
      const t0 = performance.now();
      await run(m, id, ['true']);
      out.push(performance.now() - t0);
    }
  }
  return out;
}

/** CPU time of this process (the node: policy timers, exit watches, its loops) per minute over a window where nothing is asked of it. */
async function idleCpuMs(windowMs: number): Promise<number> {
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  await new Promise((r) => setTimeout(r, windowMs));
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000 / ((performance.now() - w0) / 60_000);
}

async function memAvailableMb(): Promise<number> {
  const info = await readFile('/proc/meminfo', 'utf8');
  return Number(/^MemAvailable:\s+(\d+) kB/m.exec(info)?.[1] ?? 0) / 1024;
}

/** Memory charged to every sandbox's cgroup together (their parent's). */
async function cgroupMemory(parent: string): Promise<number> {
  const v2 = await readFile(join('/sys/fs/cgroup', parent, 'memory.current'), 'utf8').catch(() => undefined);
  const s = v2 ?? (await readFile(join('/sys/fs/cgroup/memory', parent, 'memory.usage_in_bytes'), 'utf8').catch(() => '0'));
  return Number(s.trim()) || 0;
}

async function deletedSubvolumes(mount: string): Promise<number> {
  const r = await exec('btrfs', ['subvolume', 'list', '-d', mount], { allowFailure: true });
  return r.stdout.split('\n').filter((l) => l.trim()).length;
}

/** The host settings a run of thousands of sandboxes meets first. */
async function hostLimits(): Promise<Record<string, string>> {
  const read = async (p: string) => (await readFile(p, 'utf8').catch(() => '?')).trim();
  const nofile = /^Max open files\s+(\S+)/m.exec(await read('/proc/self/limits'))?.[1] ?? '?';
  return {
    pid_max: await read('/proc/sys/kernel/pid_max'),
    threads_max: await read('/proc/sys/kernel/threads-max'),
    inotify_watches: await read('/proc/sys/fs/inotify/max_user_watches'),
    user_namespaces: await read('/proc/sys/user/max_user_namespaces'),
    net_namespaces: await read('/proc/sys/user/max_net_namespaces'),
    mnt_namespaces: await read('/proc/sys/user/max_mnt_namespaces'),
    nofile,
  };
}

function fmt(x: number): string {
  return Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '-';
}
