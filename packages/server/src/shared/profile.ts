/**
 * Where the time of an operation goes: named spans (subprocesses, phases of
 * a snapshot or restore) reported to one sink. Off unless a sink is set (the
 * bench's profile) or FORKD_PROFILE is in the environment (spans to stderr),
 * so the cost when off is one comparison.
 */
export interface Span {
  name: string;
  /** performance.now() at its start. */
  startMs: number;
  ms: number;
}

export type SpanSink = (s: Span) => void;

let sink: SpanSink | undefined = process.env.FORKD_PROFILE ? (s) => process.stderr.write(`span ${s.ms.toFixed(1)} ms ${s.name}\n`) : undefined;

/** Sets (or, with undefined, clears) where spans go; returns the previous sink. */
export function setSpanSink(next: SpanSink | undefined): SpanSink | undefined {
  const prev = sink;
  sink = next;
  return prev;
}

export function profiling(): boolean {
  return sink !== undefined;
}

/** Reports a span that began at `startMs` (performance.now()) and ends now. */
export function endSpan(name: string, startMs: number): void {
  sink?.({ name, startMs, ms: performance.now() - startMs });
}

/** Runs `fn` as one span. */
export async function span<T>(name: string, fn: () => Promise<T>): Promise<T> {
  if (!sink) return fn();
  const t0 = performance.now();
  try {
    return await fn();
  } finally {
    endSpan(name, t0);
  }
}
