import { setSpanSink, type SandboxManager, type Span } from '@forkd/server';
import { summarize } from './stats.js';
import type { BenchRow } from './row-line.js';

/**
 * Where the time of each stateful operation goes: every subprocess and named
 * phase (shared/profile.ts spans) of resume from a hibernation, fork of one,
 * rewind and snapshot, medians per run of each, the rest as "forkd itself"
 * (store writes, the guest link, waiting). Spans of one operation may
 * overlap (a rewind freezes the tree it leaves while it restores): their
 * sum can pass the total. Rows are named "where the time goes: OP — SPAN", pushed to `rows`
 * (the core section's live rows) as each operation's runs end.
 */
export async function timeProfileRows(m: SandboxManager, id: string, snap: string, runs: number, rows: Pick<BenchRow[], 'push'>): Promise<void> {
  const ops: Array<[string, () => Promise<unknown>, (() => Promise<unknown>)?]> = [
    ['snapshot', () => m.snapshot(id)],
    ['resume after hibernation', () => m.resume(id), () => m.hibernate(id)],
    ['fork of one', async () => (await m.fork(snap))[0], undefined],
    ['rewind', () => m.rewind(id, snap), () => m.settled()],
  ];
  for (const [op, fn, prepare] of ops) {
    const perSpan = new Map<string, number[]>();
    const totals: number[] = [];
    for (let i = 0; i < runs; i++) {
      await prepare?.();
      const spans: Span[] = [];
      const prev = setSpanSink((s) => spans.push(s));
      const t0 = performance.now();
      let made: unknown;
      try {
        made = await fn();
      } finally {
        setSpanSink(prev);
      }
      totals.push(performance.now() - t0);
      const sums = new Map<string, number>();
      for (const s of spans) sums.set(s.name, (sums.get(s.name) ?? 0) + s.ms);
      sums.set('forkd itself (the rest)', Math.max(0, totals[i]! - [...sums.values()].reduce((a, b) => a + b, 0)));
      for (const [name, ms] of sums) perSpan.set(name, [...(perSpan.get(name) ?? []), ms]);
      if (op === 'fork of one' && made && typeof made === 'object' && 'id' in made) await m.delete(String(made.id));
    }
    rows.push({ name: `where the time goes: ${op} — total`, unit: 'ms', summary: summarize(totals) });
    const ordered = [...perSpan.entries()].map(([name, xs]) => ({ name, summary: summarize(xs) })).sort((a, b) => b.summary.p50 - a.summary.p50);
    for (const r of ordered) rows.push({ name: `where the time goes: ${op} — ${r.name}`, unit: 'ms', summary: r.summary });
  }
}
