import type { TraceParent } from './request-context.js';

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * A caller's W3C `traceparent` header (`00-<trace id>-<span id>-<flags>`),
 * so forkd's spans join the caller's trace; undefined for anything else:
 * absent, malformed, all-zero ids, version ff, or version 00 with a tail.
 * A bad header is ignored, never an error: tracing must not refuse a call.
 */
export function parseTraceparent(header: string | undefined): TraceParent | undefined {
  if (header === undefined || header.length > 512) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, , tail] = m as unknown as [string, string, string, string, string, string | undefined];
  if (version === 'ff' || (version === '00' && tail !== undefined)) return undefined;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId };
}
