/** One sample of a Prometheus text exposition. */
export interface PromSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface PromExposition {
  /** Family name to its TYPE. */
  types: Map<string, string>;
  samples: PromSample[];
}

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)$`);
const LABEL = /^([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"(?:,|$)/;

function parseLabels(s: string, line: string): Record<string, string> {
  const out: Record<string, string> = {};
  let rest = s;
  while (rest.length > 0) {
    const m = LABEL.exec(rest);
    if (!m) throw new Error(`bad labels: ${line}`);
    if (m[1]! in out) throw new Error(`label twice: ${line}`);
    out[m[1]!] = m[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    rest = rest.slice(m[0].length);
  }
  return out;
}

/** The family a sample belongs to: a histogram's `_bucket`, `_sum` and `_count` are its own. */
function family(name: string, types: Map<string, string>): string | undefined {
  if (types.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return types.get(base) === 'histogram' ? base : undefined;
}

/** Checks a histogram's buckets: `le` ascending, counts cumulative, `+Inf` equal to `_count`. */
function checkHistogram(name: string, samples: readonly PromSample[]): void {
  const series = new Map<string, PromSample[]>();
  const key = (l: Record<string, string>) => JSON.stringify(Object.entries(l).filter(([k]) => k !== 'le').sort());
  for (const s of samples.filter((x) => x.name === `${name}_bucket`)) series.set(key(s.labels), [...(series.get(key(s.labels)) ?? []), s]);
  for (const [k, buckets] of series) {
    const les = buckets.map((b) => (b.labels.le === '+Inf' ? Infinity : Number(b.labels.le)));
    if (les[les.length - 1] !== Infinity) throw new Error(`${name}${k}: no +Inf bucket`);
    for (let i = 1; i < buckets.length; i++) {
      if (!(les[i]! > les[i - 1]!)) throw new Error(`${name}${k}: le not ascending`);
      if (buckets[i]!.value < buckets[i - 1]!.value) throw new Error(`${name}${k}: buckets not cumulative`);
    }
    const count = samples.find((s) => s.name === `${name}_count` && key(s.labels) === k);
    if (!count || !samples.some((s) => s.name === `${name}_sum` && key(s.labels) === k)) throw new Error(`${name}${k}: no _count or _sum`);
    if (count.value !== buckets[buckets.length - 1]!.value) throw new Error(`${name}${k}: +Inf bucket is not _count`);
  }
}

/**
 * Parses Prometheus' text exposition format (0.0.4) strictly: every sample
 * of a declared family, one TYPE per family before its samples, valid
 * names, escaped label values, numeric values, consistent histograms.
 * Throws on the first violation.
 */
export function parsePromText(text: string): PromExposition {
  if (!text.endsWith('\n')) throw new Error('no final newline');
  const types = new Map<string, string>();
  const samples: PromSample[] = [];
  for (const line of text.slice(0, -1).split('\n')) {
    const meta = new RegExp(`^# (HELP|TYPE) (${NAME}) (.*)$`).exec(line);
    if (meta) {
      if (meta[1] === 'TYPE') {
        if (types.has(meta[2]!)) throw new Error(`TYPE twice: ${line}`);
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(meta[3]!)) throw new Error(`bad TYPE: ${line}`);
        if (samples.some((s) => family(s.name, new Map([[meta[2]!, meta[3]!]])))) throw new Error(`TYPE after samples: ${line}`);
        types.set(meta[2]!, meta[3]!);
      }
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample: ${JSON.stringify(line)}`);
    const value = m[3] === '+Inf' ? Infinity : m[3] === '-Inf' ? -Infinity : Number(m[3]);
    if (Number.isNaN(value) && m[3] !== 'NaN') throw new Error(`bad value: ${line}`);
    if (!family(m[1]!, types)) throw new Error(`sample of no declared family: ${line}`);
    samples.push({ name: m[1]!, labels: parseLabels(m[2] ?? '', line), value });
  }
  for (const [name, type] of types) if (type === 'histogram') checkHistogram(name, samples);
  return { types, samples };
}

/** Every name a query may use for the families exposed: a histogram's three series, the others' own. */
export function queryableNames(types: ReadonlyMap<string, string>): Set<string> {
  const out = new Set<string>();
  for (const [name, type] of types) {
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) out.add(name + s);
    else out.add(name);
  }
  return out;
}
