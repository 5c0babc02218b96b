import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OtlpExporter, otlpPayload, tracesUrl, type FinishedSpan } from './otlp-exporter.js';

const span = (n: number, error?: string): FinishedSpan => ({
  traceId: 'a'.repeat(32),
  spanId: n.toString(16).padStart(16, '0'),
  parentSpanId: n > 1 ? '0'.repeat(15) + '1' : undefined,
  name: `forkd.op${n}`,
  startNs: 1_700_000_000_123_456_789n,
  endNs: 1_700_000_000_223_456_789n,
  attributes: { 'forkd.sandbox_id': 'sb-1', 'forkd.count': 3, ratio: 0.5, warm: true },
  error,
});

test('the payload is an OTLP/HTTP JSON ExportTraceServiceRequest: hex ids, nanosecond strings, typed attributes, status', () => {
  const body = JSON.parse(otlpPayload([span(1), span(2, 'INTERNAL')], 'forkd', '1.2.3'));
  const rs = body.resourceSpans[0];
  assert.deepEqual(rs.resource.attributes, [
    { key: 'service.name', value: { stringValue: 'forkd' } },
    { key: 'service.version', value: { stringValue: '1.2.3' } },
  ]);
  const [a, b] = rs.scopeSpans[0].spans;
  assert.equal(rs.scopeSpans[0].scope.name, 'forkd');
  assert.equal(a.traceId, 'a'.repeat(32));
  assert.equal(a.spanId, '0000000000000001');
  assert.equal('parentSpanId' in a, false);
  assert.equal(b.parentSpanId, '0000000000000001');
  assert.equal(a.startTimeUnixNano, '1700000000123456789');
  assert.equal(a.endTimeUnixNano, '1700000000223456789');
  assert.equal(a.kind, 1);
  assert.deepEqual(a.attributes, [
    { key: 'forkd.sandbox_id', value: { stringValue: 'sb-1' } },
    { key: 'forkd.count', value: { intValue: '3' } },
    { key: 'ratio', value: { doubleValue: 0.5 } },
    { key: 'warm', value: { boolValue: true } },
  ]);
  assert.deepEqual(a.status, { code: 1 });
  assert.deepEqual(b.status, { code: 2, message: 'INTERNAL' });
});

test('batches: one send per batch, in order', async () => {
  const sent: number[][] = [];
  const e = new OtlpExporter({ url: 'http://x/v1/traces', serviceName: 's', serviceVersion: 'v', maxBatch: 2, intervalMs: 60_000, post: async (_u, body) => void sent.push(JSON.parse(body).resourceSpans[0].scopeSpans[0].spans.map((s: { spanId: string }) => parseInt(s.spanId, 16))) });
  for (let i = 1; i <= 5; i++) e.add(span(i));
  await e.close();
  assert.deepEqual(sent, [[1, 2], [3, 4], [5]]);
  assert.deepEqual(e.stats(), { exported: 5, dropped: 0, queued: 0 });
});

test('a collector that hangs: add never waits, the queue stays bounded and the rest is dropped and counted', async () => {
  let release!: () => void;
  const hanging = new Promise<void>((r) => (release = r));
  let posts = 0;
  const e = new OtlpExporter({ url: 'http://x/v1/traces', serviceName: 's', serviceVersion: 'v', maxQueue: 10, maxBatch: 4, intervalMs: 60_000, post: () => (posts++, hanging) });
  const t0 = performance.now();
  for (let i = 1; i <= 1000; i++) e.add(span(i));
  assert.ok(performance.now() - t0 < 500, 'adding is not blocked by the collector');
  assert.equal(posts, 1, 'one send in flight at a time');
  // 4 taken by the hanging send, 10 queued, the rest dropped.
  assert.deepEqual(e.stats(), { exported: 0, dropped: 986, queued: 10 });
  release();
  await e.close();
  assert.deepEqual(e.stats(), { exported: 14, dropped: 986, queued: 0 });
});

test('a collector that is down: the batch is dropped and counted, not retried forever; later spans go out once it is back', async () => {
  let up = false;
  const e = new OtlpExporter({ url: 'http://x/v1/traces', serviceName: 's', serviceVersion: 'v', intervalMs: 60_000, post: async () => {
    if (!up) throw new Error('ECONNREFUSED');
  } });
  e.add(span(1));
  e.add(span(2));
  await e.flush();
  assert.deepEqual(e.stats(), { exported: 0, dropped: 2, queued: 0 });
  up = true;
  e.add(span(3));
  await e.close();
  assert.deepEqual(e.stats(), { exported: 1, dropped: 2, queued: 0 });
});

test('the real sender against a closed loopback port: rejected quickly, counted as dropped', async () => {
  const e = new OtlpExporter({ url: 'http://127.0.0.1:9/v1/traces', serviceName: 's', serviceVersion: 'v', intervalMs: 60_000, timeoutMs: 2000 });
  e.add(span(1));
  await e.close();
  assert.deepEqual(e.stats(), { exported: 0, dropped: 1, queued: 0 });
});

test('FORKD_OTLP_ENDPOINT: a base URL gets /v1/traces, a full one is kept, anything else is refused', () => {
  assert.equal(tracesUrl('http://collector:4318'), 'http://collector:4318/v1/traces');
  assert.equal(tracesUrl('http://collector:4318/otlp/'), 'http://collector:4318/otlp/v1/traces');
  assert.equal(tracesUrl('https://c.example/v1/traces'), 'https://c.example/v1/traces');
  assert.throws(() => tracesUrl('collector:4318'), /http/);
  assert.throws(() => tracesUrl('not a url'));
});
