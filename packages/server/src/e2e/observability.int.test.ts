import { mkdtemp } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { api, type ApiTarget } from '../testing/http-client.js';
import { startDaemonProcess, stopDaemonProcess, type DaemonProcess } from '../testing/daemon-process.js';
import { disposeNodeDir, isRoot, testConfig } from '../testing/test-node.js';
import { waitFor } from '../testing/helpers.js';
import { parsePromText } from '../testing/prometheus-text.js';

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Array<{ key: string; value: { stringValue?: string } }>;
}

/** A loopback OTLP/HTTP collector: keeps every span POSTed to /v1/traces. */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; paths: string[]; close(): Promise<void> }> {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      paths.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const body = JSON.parse(Buffer.concat(chunks).toString());
      for (const rs of body.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, spans, paths, close: () => new Promise((r) => server.close(() => r())) };
}

/** The lifecycle histogram's `_count` per operation with result ok. */
async function lifecycleCounts(d: ApiTarget): Promise<Map<string, number>> {
  const r = await api(d, 'GET', '/metrics');
  assert.equal(r.status, 200, r.text);
  const p = parsePromText(r.text);
  return new Map(p.samples.filter((s) => s.name === 'forkd_lifecycle_duration_seconds_count' && s.labels.result === 'ok').map((s) => [s.labels.operation!, s.value]));
}

describe('observability of a real daemon: lifecycle histograms on /metrics, OTLP spans to a collector', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess;
  let collector: Awaited<ReturnType<typeof startCollector>>;

  before(async () => {
    collector = await startCollector();
    dir = await mkdtemp(join(tmpdir(), 'forkd-observe-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess({ ...cfg.env, FORKD_OTLP_ENDPOINT: collector.url });
  });
  after(async () => {
    await stopDaemonProcess(daemon, 'SIGTERM');
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
    await collector?.close();
  });

  test('create, snapshot and delete move their histograms and arrive as spans with ids, names and request ids', async () => {
    const before = await lifecycleCounts(daemon);
    const created = await fetchJson(daemon, 'POST', '/v1/sandboxes', { memoryMb: 128 });
    assert.equal(created.status, 201, created.text);
    const id = created.json.id as string;
    const snap = await fetchJson(daemon, 'POST', `/v1/sandboxes/${id}/snapshots`, {});
    assert.equal(snap.status, 201, snap.text);
    // A caller's W3C traceparent: the delete's span joins its trace.
    const callerTrace = '4bf92f3577b34da6a3ce929d0e0e4736';
    const del = await fetchJson(daemon, 'DELETE', `/v1/sandboxes/${id}`, undefined, { traceparent: `00-${callerTrace}-00f067aa0ba902b7-01` });
    assert.ok(del.status < 300, del.text);

    const afterCounts = await lifecycleCounts(daemon);
    for (const op of ['create', 'snapshot', 'delete']) assert.equal((afterCounts.get(op) ?? 0) - (before.get(op) ?? 0), 1, `${op} counted once`);

    const requests = { 'forkd.create': created.requestId, 'forkd.snapshot': snap.requestId, 'forkd.delete': del.requestId };
    const find = (name: string, requestId: string | null) => collector.spans.find((s) => s.name === name && s.attributes.some((a) => a.key === 'forkd.request_id' && a.value.stringValue === requestId));
    await waitFor(() => Object.entries(requests).every(([n, r]) => find(n, r)), 15_000, 'the three spans at the collector');
    assert.match(collector.paths[0] ?? '', /^POST \/v1\/traces application\/json$/);
    for (const [name, requestId] of Object.entries(requests)) {
      const s = find(name, requestId)!;
      assert.match(s.traceId, /^[0-9a-f]{32}$/, name);
      assert.match(s.spanId, /^[0-9a-f]{16}$/, name);
      assert.ok(BigInt(s.endTimeUnixNano) > BigInt(s.startTimeUnixNano), name);
      assert.ok(Math.abs(Number(BigInt(s.startTimeUnixNano) / 1_000_000n) - Date.now()) < 120_000, `${name} starts now`);
      assert.ok(s.attributes.some((a) => a.key === 'forkd.sandbox_id' && a.value.stringValue === id) || name === 'forkd.create', name);
    }
    const delSpan = find('forkd.delete', del.requestId)!;
    assert.equal(delSpan.traceId, callerTrace);
    assert.equal(delSpan.parentSpanId, '00f067aa0ba902b7');
    assert.notEqual(find('forkd.create', created.requestId)!.traceId, find('forkd.snapshot', snap.requestId)!.traceId, 'one trace per request');
    // The node's own work inside the snapshot (CRIU, the storage's snapshot) is traced as its children.
    const snapSpan = find('forkd.snapshot', snap.requestId)!;
    const children = collector.spans.filter((s) => s.parentSpanId === snapSpan.spanId);
    assert.ok(children.length > 0, `children of the snapshot span: ${collector.spans.map((s) => s.name).join(', ')}`);
    assert.ok(children.every((c) => c.traceId === snapSpan.traceId));

    // Nothing dropped on the way (the collector was up).
    const m = parsePromText((await api(daemon, 'GET', '/metrics')).text);
    assert.equal(m.samples.find((s) => s.name === 'forkd_otlp_spans_dropped_total')?.value, 0);
  });
});

/** A call and its x-request-id. */
async function fetchJson(t: ApiTarget, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any; text: string; requestId: string | null }> {
  const r = await fetch(t.url + path, { method, headers: { 'content-type': 'application/json', authorization: `Bearer ${t.apiKey}`, ...headers }, body: body === undefined ? null : JSON.stringify(body) });
  const text = await r.text();
  return { status: r.status, json: text ? JSON.parse(text) : undefined, text, requestId: r.headers.get('x-request-id') };
}
