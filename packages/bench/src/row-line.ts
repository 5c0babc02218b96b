import { LiveRows } from './live-rows.js';
import type { Summary } from './stats.js';

/** One measurement of the bench: what it is, its unit, the issue's target, its distribution. */
export interface BenchRow {
  name: string;
  unit: string;
  target?: string;
  summary: Summary;
}

/** A figure as every bench line shows it: two decimals under 10, one above. */
export const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '-');

/** How a result is printed the moment it is recorded (LiveRows). */
export function rowLine(r: BenchRow): string {
  return `${r.name}: p50 ${fmt(r.summary.p50)} ${r.unit}, p95 ${fmt(r.summary.p95)} (n ${r.summary.n})${r.target ? `; target ${r.target}` : ''}`;
}

/** A section's rows, each printed as it is pushed. */
export const liveRows = <T extends BenchRow = BenchRow>(): LiveRows<T> => new LiveRows<T>(rowLine);

/**
 * One sample, printed the moment it is taken, for sections whose rows need
 * every round first (alternating modes, several nodes): a long section
 * still shows each measurement as it finishes. Indented under the rows.
 */
export function printSample(what: string, value: number, unit: string): void {
  console.log(`  · ${what}: ${fmt(value)} ${unit}`);
}
