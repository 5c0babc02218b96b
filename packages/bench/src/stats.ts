export interface Summary {
  n: number;
  p50: number;
  p95: number;
  min: number;
  max: number;
  mean: number;
}

/** Nearest-rank percentiles; benchmark numbers are reported as medians and p95. */
export function summarize(samples: readonly number[]): Summary {
  if (!samples.length) return { n: 0, p50: NaN, p95: NaN, min: NaN, max: NaN, mean: NaN };
  const s = [...samples].sort((a, b) => a - b);
  const rank = (p: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
  return { n: s.length, p50: rank(50), p95: rank(95), min: s[0]!, max: s[s.length - 1]!, mean: s.reduce((a, b) => a + b, 0) / s.length };
}
