import { readFile } from 'node:fs/promises';
import { cpus, totalmem, release } from 'node:os';
import { exec } from '@forkd/server';
import type { Comparison } from './compare.js';
import { summarize, type Summary } from './stats.js';
import { stripChart } from './svg-chart.js';

export interface Machine {
  cpu: string;
  cores: number;
  memoryGb: number;
  kernel: string;
  debian: string;
  virtualization: string;
  runc: string;
  criu: string;
  podman: string;
}

async function firstLine(cmd: string, args: string[]): Promise<string> {
  const r = await exec(cmd, args, { allowFailure: true }).catch(() => undefined);
  return (r?.stdout || r?.stderr || 'unknown').trim().split('\n')[0] ?? 'unknown';
}

export async function describeMachine(criu: string, podmanVersion: string): Promise<Machine> {
  const cmdline = await readFile('/proc/cmdline', 'utf8').catch(() => '');
  return {
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    debian: (await readFile('/etc/debian_version', 'utf8').catch(() => 'unknown')).trim(),
    virtualization: /firecracker|console=ttyS0/.test(cmdline) ? 'microVM (Firecracker-style guest)' : 'unknown',
    runc: await firstLine('runc', ['--version']),
    criu: (await firstLine(criu, ['--version'])).replace(/^Version:\s*/, 'criu '),
    podman: podmanVersion,
  };
}

const fmt = (x: number) => (Number.isFinite(x) ? (Math.abs(x) >= 100 ? x.toFixed(0) : x < 10 ? x.toFixed(2) : x.toFixed(1)) : '-');

/** Podman p50 over forkd p50 (or the reverse for capacities): how many times better forkd is. */
export function ratio(c: Comparison): number {
  if (!c.podman?.length) return Number.NaN;
  const f = summarize(c.forkd).p50;
  const p = summarize(c.podman).p50;
  if (!(f > 0) || !(p > 0)) return Number.NaN;
  return c.lowerIsBetter === false ? f / p : p / f;
}

/** The ratio as printed: `12.3×`; `∞` where forkd needs none of what Podman needs some of (a hibernated sandbox's memory); `-` without both. */
export function ratioText(c: Comparison): string {
  const r = ratio(c);
  if (Number.isFinite(r)) return `${r.toFixed(1)}×`;
  const zero = c.lowerIsBetter !== false && c.podman?.length && summarize(c.forkd).p50 === 0 && summarize(c.podman).p50 > 0;
  return zero ? '∞' : '-';
}

/**
 * Why a row may not reach 3×: written from the profiles behind this
 * benchmark (docs/ARCHITECTURE.md, "Memory snapshots"), keyed by group.
 */
const WHY: Record<string, string> = {
  snapshot:
    "Both sides let the same CRIU 4.2 copy the pages while the tree is frozen, so the freeze is bounded by the same page copy (~0.6 ms per MB here) plus CRIU's fixed costs: ~18 ms of conntrack-table walks (set by the host's `nf_conntrack_buckets`) and ~4 ms of tar per tmpfs mount (forkd's sandboxes have none but cgroup v1's `/sys/fs/cgroup`; Podman's have several). Podman's figure is CRIU's own frozen_time (its freeze to its unfreeze); forkd's runs from its freeze to its thaw after runc returns, so it also counts CRIU's and runc's teardown (~10-20 ms) and includes the Btrfs snapshot of the files taken in the same freeze. forkd dumps into memory and writes only the pages that changed since the previous snapshot; its total time wins by not exporting a tarball.",
  'snapshot-bytes':
    'The first snapshot of a sandbox costs its full memory on both sides; the numbers are dominated by it for few repetitions. Further snapshots of an idle sandbox cost forkd ~0.2 MB (pages shared with the previous image by reflink and dedupe) against a full copy for Podman.',
  files:
    'Small files: Podman cp pays a process start and a tar stream; large files are bound by copying bytes on both sides (forkd streams through its guest agent socket).',
  restore:
    "Both restore through runc and CRIU, whose start-up (~60 ms of processes, kernel probing and image reading) is common to both; forkd restores lazily (userfaultfd: processes resume before their pages are in; in the sandbox's user namespace through forkd-uffd-broker) and reads images from its pool instead of unpacking an exported tarball, which is where its margin comes from; forkd also restores into a user namespace (an idmapped root, the images bound within the range's reach), which Podman here does not. A fork of ten restores ten trees on two cores. Rewind: forkd keeps the state being left as a snapshot (non-destructive, so one can rewind forward again): it freezes that tree while the target is restored beside it as a new instance (own container, cgroup, root volume and network namespace), records the state left and switches to the target, and answers; the frozen tree is dumped, stored with page sharing and released after the answer (anything reading that snapshot waits for its dump; a daemon that dies first takes it at its restart), and each measured rewind starts on a settled node, so that dump is never in the way of the next. Podman's nearest equivalent (remove the container, restore an exported checkpoint under its name) throws the current state away.",
  concurrency:
    'Twenty creates at once on two cores: the warm pool holds two sandboxes, so eighteen are cold creates (Btrfs snapshot, runc run, guest agent start; ~60-70 ms of mostly CPU each) that queue for the same two cores; Podman queues the same way with more work per create.',
  density: 'Idle memory is dominated by the processes inside; forkd adds one small agent, Podman a conmon per container.',
};

export function renderMarkdown(m: Machine, rows: readonly Comparison[], core: ReadonlyArray<{ name: string; unit: string; target?: string; summary: Summary }>, charts: readonly string[], date: string): string {
  const out: string[] = [
    '# Benchmarks: forkd and Podman + CRIU on one machine',
    '',
    `Generated by \`npm run bench\` on ${date}. Reproduce: \`npm run bench\` as root on a Debian 12/13 host (it installs Podman from Debian, imports forkd's base root filesystem into it, and points it at the same private CRIU ≥ 4.2 forkd uses, first on its PATH; runc is the runtime of both). Raw samples: \`bench-results/compare.json\`; medians (p50) and p95 over the samples (n).`,
    '',
    '## Machine',
    '',
    `| | |`,
    `|---|---|`,
    `| CPU | ${m.cpu}, ${m.cores} cores |`,
    `| memory | ${m.memoryGb} GiB |`,
    `| kernel | ${m.kernel} (cgroup v1 hybrid) |`,
    `| OS | Debian ${m.debian}, ${m.virtualization} |`,
    `| runtime | ${m.runc.split('\n')[0]}; ${m.criu}; ${m.podman} |`,
    '',
    '## forkd against Podman',
    '',
    'Ratio = Podman p50 / forkd p50 (for counts: forkd / Podman): how many times better forkd does.',
    '',
    '| measurement | unit | forkd p50 | forkd p95 | n | Podman p50 | Podman p95 | n | ratio | Podman operation |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const f = summarize(r.forkd);
    const p = r.podman ? summarize(r.podman) : undefined;
    out.push(`| ${r.name} | ${r.unit} | ${fmt(f.p50)} | ${fmt(f.p95)} | ${f.n} | ${p ? fmt(p.p50) : '-'} | ${p ? fmt(p.p95) : '-'} | ${p?.n ?? '-'} | ${ratioText(r)} | ${r.podmanOp ?? ''} |`);
  }
  out.push(
    '',
    'Density: host memory is the growth of non-cache memory (anonymous, kernel stacks, page tables, unreclaimable slab, shmem) over 20 idle sandboxes divided by 20; the counts that fit are extrapolated from it (running: available memory; hibernated: free disk under each side\'s storage), not filled up for real, and no other limit (pids, file descriptors) is counted.',
    '',
    '## Latency distributions',
    '',
  );
  for (const c of charts) out.push(`![${c}](docs/bench/${c})`, '');
  const slow = rows.filter((r) => ['create', 'snapshot', 'restore', 'concurrency'].includes(r.group) && Number.isFinite(ratio(r)) && ratio(r) < 3);
  out.push('## Where forkd is not 3× faster', '');
  if (!slow.length) out.push('Every create+exec, snapshot and restore/fork row is at least 3× faster than Podman in this run.', '');
  else {
    for (const r of slow) out.push(`* **${r.name}**: ${ratio(r).toFixed(1)}×.`);
    out.push('');
    for (const g of new Set(slow.map((r) => r.group))) if (WHY[g]) out.push(`*${g}*: ${WHY[g]}`, '');
  }
  const LEVER = 'lever: ';
  const PROFILE = 'where the time goes: ';
  out.push('## forkd alone (targets of the stateful core)', '', '| measurement | unit | n | p50 | p95 | target |', '|---|---|---|---|---|---|');
  for (const r of core.filter((x) => !x.name.startsWith(LEVER) && !x.name.startsWith(PROFILE))) out.push(`| ${r.name} | ${r.unit} | ${r.summary.n} | ${fmt(r.summary.p50)} | ${fmt(r.summary.p95)} | ${r.target ?? ''} |`);
  out.push('', ...leverTable(core.filter((x) => x.name.startsWith(LEVER)), LEVER));
  out.push('## Where the time goes', '', 'Each operation of the 100 MB sandbox split into its subprocesses and named phases (profile spans, `FORKD_PROFILE=1` prints them); "forkd itself" is the rest (store, guest link, waits). Spans of one operation can overlap (a rewind freezes the tree it leaves while it restores the target; the dump of that tree comes after the answer and is not counted).', '', '| operation — part | p50 ms | p95 ms | n |', '|---|---|---|---|');
  for (const r of core.filter((x) => x.name.startsWith(PROFILE))) out.push(`| ${r.name.slice(PROFILE.length)} | ${fmt(r.summary.p50)} | ${fmt(r.summary.p95)} | ${r.summary.n} |`);
  out.push(
    '',
    "Host CPU per snapshot: CPU time of the bench process and of everything it starts while `snapshot` runs (runc, criu, CRIU's action script and the Btrfs snapshot it starts, the page store's forkd-patch), read from the accounting of a cgroup the bench moves itself into, so a detached helper counts too; the sandbox's own CPU (its cgroup) and kernel threads (Btrfs commits) do not. The targets: 50 ms (issue 24), and at most the freeze's wall time: waiting for the freeze and for the Btrfs snapshot blocks in the kernel (inotify, a FIFO) or sleeps, so nothing spins while the sandbox is frozen.",
    '',
  );
  return out.join('\n');
}

/** Rows "lever: NAME — OP (off|on)" as one table: each lever's effect alone. */
function leverTable(rows: ReadonlyArray<{ name: string; summary: Summary }>, prefix: string): string[] {
  const out = ['## Each lever alone', '', 'A node with one lever switched off by its knob against a node with all of them on (the defaults) measured just before it, the same 10 MB sandbox, the same run (`packages/bench/src/levers.ts`).', '', '| lever | operation | off p50 ms | on p50 ms | off / on |', '|---|---|---|---|---|'];
  const pairs = new Map<string, { off?: Summary; on?: Summary }>();
  for (const r of rows) {
    const m = /^(.*) \((off|on)\)$/.exec(r.name.slice(prefix.length));
    if (!m) continue;
    const e = pairs.get(m[1]!) ?? {};
    e[m[2] as 'off' | 'on'] = r.summary;
    pairs.set(m[1]!, e);
  }
  for (const [key, { off, on }] of pairs) {
    const [lever, op] = key.split(' — ');
    const x = off && on && on.p50 > 0 ? `${(off.p50 / on.p50).toFixed(1)}×` : '-';
    out.push(`| ${lever} | ${op ?? ''} | ${off ? fmt(off.p50) : '-'} | ${on ? fmt(on.p50) : '-'} | ${x} |`);
  }
  return [...out, ''];
}

/** One SVG per group of latency rows. */
export function renderCharts(rows: readonly Comparison[]): Array<{ file: string; svg: string }> {
  const groups = [...new Set(rows.filter((r) => r.unit === 'ms').map((r) => r.group))];
  return groups.map((g) => ({
    file: `${g}.svg`,
    svg: stripChart(`${g}: forkd vs Podman`, 'ms', ['forkd', 'Podman + CRIU'], rows.filter((r) => r.group === g && r.unit === 'ms').map((r) => ({ label: r.name, samples: [r.forkd, r.podman ?? []] }))),
  }));
}
