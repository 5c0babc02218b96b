/** A Prometheus label value, escaped. */
export function label(v: string): string {
  return v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

interface Series {
  labels: string;
  counts: number[];
  sum: number;
  count: number;
}

/**
 * One Prometheus histogram (seconds), one series per label set. Callers keep
 * label values to closed sets (route patterns, operation names, error
 * codes): the series count is then bounded by those sets' product.
 */
export class Histogram {
  readonly #series = new Map<string, Series>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly buckets: readonly number[],
  ) {}

  observe(labels: Readonly<Record<string, string>>, seconds: number): void {
    const key = Object.entries(labels)
      .map(([k, v]) => `${k}="${label(v)}"`)
      .join(',');
    let s = this.#series.get(key);
    if (!s) {
      s = { labels: key, counts: this.buckets.map(() => 0), sum: 0, count: 0 };
      this.#series.set(key, s);
    }
    for (let i = 0; i < this.buckets.length; i++) if (seconds <= this.buckets[i]!) s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }

  /** Text exposition: HELP and TYPE even before the first observation, so dashboards and alerts find the name. */
  render(): string[] {
    const out = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    for (const s of this.#series.values()) {
      const l = s.labels ? `${s.labels},` : '';
      this.buckets.forEach((b, i) => out.push(`${this.name}_bucket{${l}le="${b}"} ${s.counts[i]}`));
      out.push(`${this.name}_bucket{${l}le="+Inf"} ${s.count}`);
      const bare = s.labels ? `{${s.labels}}` : '';
      out.push(`${this.name}_sum${bare} ${s.sum}`, `${this.name}_count${bare} ${s.count}`);
    }
    return out;
  }
}
