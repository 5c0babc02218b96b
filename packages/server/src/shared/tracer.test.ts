import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import type { FinishedSpan } from './otlp-exporter.js';
import { createLogger } from './logger.js';
import { setSpanSink, span as profileSpan } from './profile.js';
import { withContext } from './request-context.js';
import { SpanTracer, unixNanos } from './tracer.js';

test('a traced operation: its request id, its profile spans as children, nested operations in the same trace', async () => {
  const spans: FinishedSpan[] = [];
  const tracer = new SpanTracer((s) => spans.push(s));
  const before = setSpanSink(tracer.profileSink());
  try {
    await withContext({ requestId: 'req-1' }, () =>
      tracer.span('forkd.fork', { 'forkd.source': 'sb-1' }, async () => {
        await profileSpan('criu dump', async () => {});
        await tracer.span('forkd.snapshot', {}, async () => {});
      }),
    );
    await profileSpan('outside any operation', async () => {});
  } finally {
    setSpanSink(before);
  }
  const byName = new Map(spans.map((s) => [s.name, s]));
  const root = byName.get('forkd.fork')!;
  assert.match(root.traceId, /^[0-9a-f]{32}$/);
  assert.match(root.spanId, /^[0-9a-f]{16}$/);
  assert.equal(root.parentSpanId, undefined);
  assert.equal(root.attributes['forkd.request_id'], 'req-1');
  assert.equal(root.attributes['forkd.source'], 'sb-1');
  for (const child of ['criu dump', 'forkd.snapshot']) {
    assert.equal(byName.get(child)?.traceId, root.traceId, child);
    assert.equal(byName.get(child)?.parentSpanId, root.spanId, child);
  }
  assert.equal(byName.has('outside any operation'), false);
  assert.ok(root.endNs >= root.startNs);
});

test("a caller's trace (traceparent in the request context) is the operation's parent", async () => {
  const spans: FinishedSpan[] = [];
  const trace = { traceId: 'ab'.repeat(16), spanId: 'cd'.repeat(8) };
  await withContext({ trace }, () => new SpanTracer((s) => spans.push(s)).span('forkd.pause', {}, async () => {}));
  assert.equal(spans[0]?.traceId, trace.traceId);
  assert.equal(spans[0]?.parentSpanId, trace.spanId);
});

test('a failed operation: its span carries the error code and the error goes on unchanged', async () => {
  const spans: FinishedSpan[] = [];
  const err = new ForkdError('NOT_FOUND', 'no such sandbox');
  await assert.rejects(new SpanTracer((s) => spans.push(s)).span('forkd.delete', {}, async () => Promise.reject(err)), (e) => e === err);
  assert.equal(spans[0]?.error, 'NOT_FOUND');
});

test('unixNanos keeps sub-millisecond precision', () => {
  const a = unixNanos(1000.000_5);
  const b = unixNanos(1000.001_5);
  assert.equal(b - a, 1000n);
  assert.ok(a > 1_600_000_000_000_000_000n);
});

test('every log line logged while serving a request carries its id, even from code that never saw it', async () => {
  const lines: string[] = [];
  const log = createLogger('info', (l) => lines.push(l));
  const deepInTheNode = async () => {
    await new Promise((r) => setImmediate(r));
    log.info('criu dumped');
  };
  await withContext({ requestId: 'req-abc' }, deepInTheNode);
  log.info('no request');
  await withContext({ requestId: 'req-abc' }, async () => log.warn('explicit wins', { requestId: 'req-other' }));
  const parsed = lines.map((l) => JSON.parse(l));
  assert.equal(parsed[0].requestId, 'req-abc');
  assert.equal('requestId' in parsed[1], false);
  assert.equal(parsed[2].requestId, 'req-other');
});
