/** A finished span, as the tracer hands it over (ids lowercase hex, times in Unix nanoseconds). */
export interface FinishedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string | undefined;
  name: string;
  startNs: bigint;
  endNs: bigint;
  attributes: Readonly<Record<string, string | number | boolean>>;
  /** Set when the operation failed: its error code. */
  error?: string | undefined;
}

/** Sends one OTLP/HTTP JSON body; rejects on a transport failure or a non-2xx answer. */
export type OtlpPost = (url: string, body: string) => Promise<void>;

export interface OtlpExporterOptions {
  /** The collector's traces URL (…/v1/traces). */
  url: string;
  serviceName: string;
  serviceVersion: string;
  /** Spans waiting at most; more are dropped (and counted), never waited for. */
  maxQueue?: number;
  maxBatch?: number;
  intervalMs?: number;
  timeoutMs?: number;
  post?: OtlpPost;
}

export interface OtlpExporterStats {
  exported: number;
  dropped: number;
  queued: number;
}

/** The OTLP JSON encoding of one attribute value (int64s as strings, as protobuf's JSON mapping has them). */
function anyValue(v: string | number | boolean): Record<string, unknown> {
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
  return { stringValue: v };
}

const attributes = (a: Readonly<Record<string, string | number | boolean>>) => Object.entries(a).map(([key, v]) => ({ key, value: anyValue(v) }));

/** The ExportTraceServiceRequest body of `spans` (OTLP/HTTP JSON: ids hex, not base64). */
export function otlpPayload(spans: readonly FinishedSpan[], serviceName: string, serviceVersion: string): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: attributes({ 'service.name': serviceName, 'service.version': serviceVersion }) },
        scopeSpans: [
          {
            scope: { name: 'forkd', version: serviceVersion },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: 1,
              startTimeUnixNano: String(s.startNs),
              endTimeUnixNano: String(s.endNs),
              attributes: attributes(s.attributes),
              status: s.error === undefined ? { code: 1 } : { code: 2, message: s.error },
            })),
          },
        ],
      },
    ],
  });
}

function fetchPost(timeoutMs: number): OtlpPost {
  return async (url, body) => {
    const r = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(timeoutMs) });
    await r.arrayBuffer().catch(() => undefined);
    if (!r.ok) throw new Error(`collector answered ${r.status}`);
  };
}

/**
 * Spans to an OTLP/HTTP collector in batches, off every operation's path:
 * `add` only queues (a full queue drops the span and counts it), one send
 * at a time, and a batch the collector does not take is dropped and counted
 * rather than retried, so a collector that is down costs a bounded queue.
 */
export class OtlpExporter {
  readonly #o: Required<Omit<OtlpExporterOptions, 'post'>> & { post: OtlpPost };
  readonly #queue: FinishedSpan[] = [];
  readonly #timer: NodeJS.Timeout;
  #sending: Promise<void> | undefined;
  #exported = 0;
  #dropped = 0;

  constructor(o: OtlpExporterOptions) {
    const timeoutMs = o.timeoutMs ?? 5000;
    this.#o = { maxQueue: 2048, maxBatch: 512, intervalMs: 1000, ...o, timeoutMs, post: o.post ?? fetchPost(timeoutMs) };
    this.#timer = setInterval(() => void this.flush(), this.#o.intervalMs).unref();
  }

  add(span: FinishedSpan): void {
    if (this.#queue.length >= this.#o.maxQueue) {
      this.#dropped++;
      return;
    }
    this.#queue.push(span);
    if (this.#queue.length >= this.#o.maxBatch) void this.flush();
  }

  /** Sends what is queued; resolves when the queue is empty or the one send in flight ends. Never rejects. */
  flush(): Promise<void> {
    this.#sending ??= this.#drain().finally(() => (this.#sending = undefined));
    return this.#sending;
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, this.#o.maxBatch);
      try {
        await this.#o.post(this.#o.url, otlpPayload(batch, this.#o.serviceName, this.#o.serviceVersion));
        this.#exported += batch.length;
      } catch {
        this.#dropped += batch.length;
        return;
      }
    }
  }

  stats(): OtlpExporterStats {
    return { exported: this.#exported, dropped: this.#dropped, queued: this.#queue.length };
  }

  /** Stops the timer and sends what is left (bounded by the send timeout). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}

/** FORKD_OTLP_ENDPOINT as OTEL_EXPORTER_OTLP_ENDPOINT is read: a base URL gets `/v1/traces`; a URL already ending so is used as is. */
export function tracesUrl(endpoint: string): string {
  const u = new URL(endpoint);
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error(`FORKD_OTLP_ENDPOINT must be an http(s) URL, got ${JSON.stringify(endpoint)}`);
  if (u.pathname.endsWith('/v1/traces')) return u.toString();
  u.pathname = u.pathname.replace(/\/$/, '') + '/v1/traces';
  return u.toString();
}
