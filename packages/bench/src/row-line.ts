import type { Summary } from './stats.js';

const fmt = (x: number) => (Number.isFinite(x) ? x.toFixed(x < 10 ? 2 : 1) : '-');

/** How a result is printed the moment it is recorded (LiveRows). */
export function rowLine(r: { name: string; unit: string; target?: string; summary: Summary }): string {
  return `${r.name}: p50 ${fmt(r.summary.p50)} ${r.unit}, p95 ${fmt(r.summary.p95)} (n ${r.summary.n})${r.target ? `; target ${r.target}` : ''}`;
}
