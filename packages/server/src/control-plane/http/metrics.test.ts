import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Metrics, LIFECYCLE_BUCKETS } from './metrics.js';
import { parsePromText } from '../../testing/prometheus-text.js';
import { sandboxInfo } from '../../testing/sandbox-info.js';
import type { NodeStats } from '../../node-contract/index.js';

const stats: NodeStats = { snapshots: 3, snapshotBytes: 10, poolUsedBytes: 20, poolSizeBytes: 30, warmPoolHeld: 1, memoryCommittedBytes: 2 ** 30, memoryCapBytes: 2 ** 32, cpus: 2 };

test('lifecycle histograms: valid text exposition, cumulative buckets from a millisecond to minutes, one series per operation and result', () => {
  const m = new Metrics(() => ({ exported: 7, dropped: 2, queued: 0 }));
  m.lifecycle('create', 'ok', 0.004);
  m.lifecycle('create', 'ok', 0.2);
  m.lifecycle('create', 'RESOURCE_EXHAUSTED', 0.0005);
  m.lifecycle('template_build', 'ok', 95);
  m.observe('POST /v1/sandboxes', 'OK', 12);
  const p = parsePromText(m.render([], stats));
  assert.equal(p.types.get('forkd_lifecycle_duration_seconds'), 'histogram');
  const bucket = (op: string, result: string, le: string) => p.samples.find((s) => s.name === 'forkd_lifecycle_duration_seconds_bucket' && s.labels.operation === op && s.labels.result === result && s.labels.le === le)?.value;
  assert.equal(bucket('create', 'ok', '0.001'), 0);
  assert.equal(bucket('create', 'ok', '0.005'), 1);
  assert.equal(bucket('create', 'ok', '0.25'), 2);
  assert.equal(bucket('create', 'ok', '+Inf'), 2);
  assert.equal(bucket('create', 'RESOURCE_EXHAUSTED', '0.001'), 1);
  assert.equal(bucket('template_build', 'ok', '60'), 0);
  assert.equal(bucket('template_build', 'ok', '120'), 1);
  const sum = p.samples.find((s) => s.name === 'forkd_lifecycle_duration_seconds_sum' && s.labels.operation === 'create' && s.labels.result === 'ok');
  assert.ok(Math.abs(sum!.value - 0.204) < 1e-9);
  assert.equal(LIFECYCLE_BUCKETS[0], 0.001);
  assert.ok(LIFECYCLE_BUCKETS[LIFECYCLE_BUCKETS.length - 1]! >= 600, 'minutes');
  assert.equal(p.samples.find((s) => s.name === 'forkd_otlp_spans_dropped_total')?.value, 2);
  assert.equal(p.samples.find((s) => s.name === 'forkd_memory_committed_bytes')?.value, 2 ** 30);
});

test('names are exposed before their first sample (a dashboard never queries an unknown name)', () => {
  const p = parsePromText(new Metrics().render([], stats));
  for (const n of ['forkd_lifecycle_duration_seconds', 'forkd_api_request_duration_seconds', 'forkd_tenant_running_sandboxes', 'forkd_tenant_memory_committed_bytes', 'forkd_otlp_spans_dropped_total']) assert.ok(p.types.has(n), n);
});

test('per tenant: running sandboxes and their memory limits, one series per tenant, label values escaped', () => {
  const sandboxes = [
    sandboxInfo('a', { limits: { memoryMb: 256, cpus: 1, pids: 10 } }),
    sandboxInfo('b'),
    sandboxInfo('c', { state: 'paused' }),
    sandboxInfo('d'),
  ];
  const owners = new Map([
    ['a', 'acme'],
    ['b', 'acme'],
    ['c', 'acme'],
    ['d', 'we"ird\\'],
  ]);
  const p = parsePromText(new Metrics().render(sandboxes, stats, { owners }));
  const v = (name: string, tenant: string) => p.samples.find((s) => s.name === name && s.labels.tenant === tenant)?.value;
  assert.equal(v('forkd_tenant_running_sandboxes', 'acme'), 2);
  assert.equal(v('forkd_tenant_memory_committed_bytes', 'acme'), (256 + 512) * 2 ** 20);
  assert.equal(v('forkd_tenant_running_sandboxes', 'we"ird\\'), 1);
  assert.equal(p.samples.filter((s) => s.name === 'forkd_tenant_running_sandboxes').length, 2);
});

test('the validator refuses what Prometheus would', () => {
  assert.throws(() => parsePromText('forkd_x 1\n'), /no declared family/);
  assert.throws(() => parsePromText('# TYPE forkd_x gauge\nforkd_x{a="b} 1\n'), /bad labels/);
  assert.throws(() => parsePromText('# TYPE forkd_x gauge\nforkd_x one\n'), /bad value/);
  assert.throws(() => parsePromText('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n'), /cumulative/);
  assert.throws(() => parsePromText('# TYPE h histogram\nh_bucket{le="1"} 1\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 2\n'), /_count/);
});
