import { summarize } from './stats.js';

export interface ChartRow {
  label: string;
  /** One sample list per system (same order as `systems`). */
  samples: number[][];
}

const COLORS = ['#2563eb', '#dc2626', '#16a34a', '#9333ea'];

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/**
 * Latency distributions as an SVG strip chart: one row per measurement, every
 * sample a dot on a log scale, p50 as a bar and p95 as a tick, per system.
 */
export function stripChart(title: string, unit: string, systems: readonly string[], rows: readonly ChartRow[]): string {
  const all = rows.flatMap((r) => r.samples.flat()).filter((x) => x > 0 && Number.isFinite(x));
  const lo = 10 ** Math.floor(Math.log10(Math.min(...all, 1)));
  const hi = 10 ** Math.ceil(Math.log10(Math.max(...all, 10)));
  const left = 260;
  const width = 900;
  const plotW = width - left - 30;
  const band = 18;
  const rowH = band * systems.length + 14;
  const top = 50;
  const height = top + rows.length * rowH + 50;
  const x = (v: number) => left + (Math.log10(Math.max(v, lo)) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo)) * plotW;
  const out: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="sans-serif" font-size="12">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="${width / 2}" y="20" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`,
  ];
  systems.forEach((s, i) => out.push(`<rect x="${left + i * 120}" y="30" width="10" height="10" fill="${COLORS[i]}"/><text x="${left + 14 + i * 120}" y="39">${esc(s)}</text>`));
  for (let d = lo; d <= hi; d *= 10) {
    out.push(`<line x1="${x(d)}" y1="${top}" x2="${x(d)}" y2="${height - 40}" stroke="#ddd"/>`, `<text x="${x(d)}" y="${height - 25}" text-anchor="middle">${d >= 1 ? d : d.toPrecision(1)} ${esc(unit)}</text>`);
  }
  rows.forEach((r, ri) => {
    const y0 = top + ri * rowH;
    out.push(`<text x="${left - 8}" y="${y0 + rowH / 2}" text-anchor="end" dominant-baseline="middle">${esc(r.label)}</text>`);
    r.samples.forEach((samples, si) => {
      const cy = y0 + 7 + si * band + band / 2;
      const color = COLORS[si % COLORS.length];
      for (const v of samples) if (v > 0 && Number.isFinite(v)) out.push(`<circle cx="${x(v).toFixed(1)}" cy="${cy}" r="3" fill="${color}" fill-opacity="0.35"/>`);
      const s = summarize(samples.filter((v) => v > 0 && Number.isFinite(v)));
      if (s.n) {
        out.push(`<rect x="${(x(s.p50) - 1.5).toFixed(1)}" y="${cy - 7}" width="3" height="14" fill="${color}"/>`);
        out.push(`<line x1="${x(s.p95).toFixed(1)}" y1="${cy - 4}" x2="${x(s.p95).toFixed(1)}" y2="${cy + 4}" stroke="${color}" stroke-width="2"/>`);
      }
    });
  });
  out.push(`<text x="${left}" y="${height - 8}" fill="#555">dots: samples · bar: median · tick: p95 · log scale</text>`, '</svg>');
  return out.join('\n') + '\n';
}
