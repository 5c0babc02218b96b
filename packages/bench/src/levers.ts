import { readFile, writeFile } from 'node:fs/promises';
import { createTestNode, run, type TestNode } from '@forkd/server/testing';
import { summarize } from './stats.js';
import { liveRows, type BenchRow } from './row-line.js';

/** One lever of issue 24, switched off by its knob while everything else stays on. */
interface Lever {
  name: string;
  /** Environment of the node with the lever off. */
  off: Record<string, string>;
  /** Host state to set for the off run, and to put back after (returns the restorer). */
  host?: () => Promise<() => Promise<void>>;
  ops: Op[];
}

type Op = 'snapshot freeze' | 'snapshot total' | 'resume after pause' | 'resume after hibernation' | 'fork of one' | 'rewind';

const BUCKETS = '/proc/sys/net/netfilter/nf_conntrack_buckets';

/** The levers a knob can switch off alone; the baseline has every one on (the defaults). */
const LEVERS: Lever[] = [
  { name: 'hot pause (resume is a thaw)', off: { FORKD_HOT_PAUSE_S: '0' }, ops: ['resume after pause'] },
  { name: 'resume keeps the root volume its pause froze (off: a fresh copy of the pause snapshot)', off: { FORKD_KEEP_PAUSED_ROOT: '0' }, ops: ['resume after hibernation'] },
  { name: 'resident spawner (tools started by forkd-spawn, not forks of the daemon)', off: { FORKD_RESIDENT_SPAWN: '0' }, ops: ['snapshot total', 'fork of one', 'rewind'] },
  { name: "a dump's steps done by criu's wrapper at CRIU's notifications (off: an action script CRIU starts at each)", off: { FORKD_CRIU_RELAY: '0' }, ops: ['snapshot freeze', 'snapshot total'] },
  { name: "a sandbox's later dumps sent to CRIU without runc, with runc's request for its first (off: runc at every dump)", off: { FORKD_CRIU_DIRECT: '0' }, ops: ['snapshot freeze', 'snapshot total'] },
  { name: "CRIU's log level 2 for relayed dumps (off: runc's 4, debug)", off: { FORKD_CRIU_DUMP_LOG_LEVEL: '4' }, ops: ['snapshot freeze', 'snapshot total'] },
  { name: "runc's CRIU version probe answered from the recorded reply", off: { FORKD_CRIU_ASK_VERSION: '1' }, ops: ['snapshot total', 'fork of one'] },
  {
    name: 'conntrack hash of 16384 buckets (was sized from memory)',
    off: { FORKD_CONNTRACK_BUCKETS: '0' },
    host: async () => {
      const before = (await readFile(BUCKETS, 'utf8').catch(() => '')).trim();
      if (!before) return async () => {};
      await writeFile(BUCKETS, '262144');
      return () => writeFile(BUCKETS, before);
    },
    ops: ['snapshot freeze'],
  },
  { name: 'runc started beside the lazy-pages daemon, CRIU waiting for it to listen (off: runc after it listens)', off: { FORKD_LAZY_CONNECT_WAIT: '0' }, ops: ['resume after hibernation', 'fork of one'] },
  { name: 'eager restore below FORKD_LAZY_RESTORE_MIN_MB (off: every restore lazy)', off: { FORKD_LAZY_RESTORE_MIN_MB: '0' }, ops: ['fork of one', 'rewind'] },
  { name: 'cgroup v1: /sys/fs/cgroup as binds, not a tmpfs CRIU archives with tar', off: { FORKD_CGROUP_V1_BINDS: '0' }, ops: ['snapshot freeze', 'fork of one', 'rewind'] },
  { name: "/dev the root's own directory bound over itself, not a tmpfs CRIU archives with tar", off: { FORKD_DEV_IN_ROOT: '0' }, ops: ['snapshot freeze', 'fork of one', 'rewind'] },
];

/** A 10 MB sandbox, so fixed costs show rather than page copying. */
const HOG = "import os,time\nb=bytearray(os.urandom(10<<20))\nopen('/tmp/ready','w').write('1')\nwhile True: time.sleep(1)";

async function measure(node: TestNode, ops: Op[], n: number): Promise<Map<Op, number[]>> {
  const m = node.manager;
  const s = await m.create({});
  (await m.spawn(s.id, { argv: ['python3', '-c', HOG], tag: 'hog' })).process.detach();
  for (let i = 0; i < 100 && (await run(m, s.id, ['test', '-e', '/tmp/ready'])).exitCode !== 0; i++) await new Promise((r) => setTimeout(r, 100));
  const out = new Map<Op, number[]>(ops.map((o) => [o, []]));
  const snap = await m.snapshot(s.id);
  for (let i = 0; i < n; i++) {
    for (const op of ops) {
      const t0 = performance.now();
      if (op === 'snapshot freeze') out.get(op)!.push((await m.snapshot(s.id)).frozenMs);
      else if (op === 'snapshot total') await m.snapshot(s.id);
      else if (op === 'resume after pause' || op === 'resume after hibernation') {
        await (op === 'resume after pause' ? m.pause(s.id) : m.hibernate(s.id));
        const t1 = performance.now();
        await m.resume(s.id);
        out.get(op)!.push(performance.now() - t1);
        continue;
      } else if (op === 'fork of one') {
        const [f] = await m.fork(snap.id);
        out.get(op)!.push(performance.now() - t0);
        await m.delete(f!.id);
        continue;
      } else if (op === 'rewind') {
        await m.settled();
        const t1 = performance.now();
        await m.rewind(s.id, snap.id);
        out.get(op)!.push(performance.now() - t1);
        continue;
      }
      if (op === 'snapshot total') out.get(op)!.push(performance.now() - t0);
    }
  }
  await m.delete(s.id);
  return out;
}

async function withEnv<T>(env: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

/**
 * Each lever's effect alone: the operations it touches on a node with only
 * that lever off, against a node with every lever on (the defaults)
 * measured just before it, same sandbox (10 MB), same run. Rows
 * "lever: NAME — OP (off|on)".
 */
export async function leverRows(quick: boolean, only?: string): Promise<BenchRow[]> {
  const n = quick ? 2 : 7;
  const rows = liveRows();
  const levers = LEVERS.filter((l) => only === undefined || l.name.includes(only));
  for (const lever of levers) {
    // The defaults measured again beside each lever: one baseline for all, taken at the run's start, carried
    // whatever the machine did then into every row (a slow first minute read as every lever helping less).
    const on = await measureWith({}, lever.ops, n);
    const restore = (await lever.host?.()) ?? (async () => {});
    let off: Map<Op, number[]>;
    try {
      off = await measureWith(lever.off, lever.ops, n);
    } finally {
      await restore();
    }
    for (const op of lever.ops) {
      const row = (state: string, xs: number[]) => ({ name: `lever: ${lever.name} — ${op} (${state})`, unit: 'ms', summary: summarize(xs) });
      rows.push(row('off', off.get(op) ?? []), row('on', on.get(op) ?? []));
    }
  }
  return [...rows];
}

/** The operations on a node of their own, with `env` on top of the defaults. */
function measureWith(env: Record<string, string>, ops: Op[], n: number): Promise<Map<Op, number[]>> {
  return withEnv(env, async () => {
    const node = await createTestNode();
    try {
      return await measure(node, ops, n);
    } finally {
      await node.dispose();
    }
  });
}
