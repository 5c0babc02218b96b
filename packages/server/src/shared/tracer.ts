import { randomBytes } from 'node:crypto';
import { toForkdError } from '@forkd/protocol';
import type { FinishedSpan } from './otlp-exporter.js';
import type { Span } from './profile.js';
import { currentContext, withContext } from './request-context.js';

export type SpanAttributes = Record<string, string | number | boolean>;

/** Where lifecycle operations become trace spans (an OTLP exporter, or nowhere). */
export interface Tracer {
  /** Runs `fn` as one span, the parent of every span started inside it. */
  span<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>): Promise<T>;
}

export const noTracer: Tracer = { span: (_name, _attributes, fn) => fn() };

/** Unix nanoseconds of a performance.now() reading, without losing the sub-millisecond part to a double. */
export function unixNanos(perfMs: number): bigint {
  // Adding first would round to ~0.25 µs at today's epoch: the origin's whole milliseconds are added as integers.
  const origin = Math.floor(performance.timeOrigin);
  return BigInt(origin) * 1_000_000n + BigInt(Math.round((performance.timeOrigin - origin + perfMs) * 1e6));
}

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * Spans of the operations it wraps, with the trace (and request id) of the
 * request they serve from the request context; their profile spans
 * (shared/profile.ts: subprocesses, snapshot and restore phases) become
 * their children through `profileSink`.
 */
export class SpanTracer implements Tracer {
  constructor(readonly emit: (s: FinishedSpan) => void) {}

  async span<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>): Promise<T> {
    const ctx = currentContext();
    const parent = ctx?.trace;
    const trace = { traceId: parent?.traceId ?? hex(16), spanId: hex(8) };
    const attrs = { ...attributes, ...(ctx?.requestId ? { 'forkd.request_id': ctx.requestId } : {}) };
    const t0 = performance.now();
    const end = (error?: string) => this.emit({ ...trace, parentSpanId: parent?.spanId, name, startNs: unixNanos(t0), endNs: unixNanos(performance.now()), attributes: attrs, error });
    try {
      const v = await withContext({ trace }, fn);
      end();
      return v;
    } catch (err) {
      end(toForkdError(err).code);
      throw err;
    }
  }

  /** A profile span inside a traced operation becomes its child; outside one it is not traced. */
  profileSink(): (s: Span) => void {
    return (s) => {
      const parent = currentContext()?.trace;
      if (!parent) return;
      this.emit({ traceId: parent.traceId, spanId: hex(8), parentSpanId: parent.spanId, name: s.name, startNs: unixNanos(s.startMs), endNs: unixNanos(s.startMs + s.ms), attributes: {} });
    };
  }
}
