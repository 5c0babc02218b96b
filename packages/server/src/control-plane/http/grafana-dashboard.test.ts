import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../../shared/config.js';
import { renderFleetMetrics } from '../../fleet/fleet-metrics.js';
import { FleetCounters } from '../../fleet/fleet-counters.js';
import { parsePromText, queryableNames } from '../../testing/prometheus-text.js';
import { Metrics } from './metrics.js';

/** Every name /metrics can expose, from the renderers themselves (the node's, and a fleet's). */
function exposedNames(): Set<string> {
  const text = new Metrics().render([], { snapshots: 0, snapshotBytes: 0, poolUsedBytes: 0, poolSizeBytes: 0, warmPoolHeld: 0 }) + renderFleetMetrics([], new Map(), 0, 0) + new FleetCounters().render();
  return queryableNames(parsePromText(text).types);
}

/** Every PromQL expression of the dashboard's panels (nested in rows too) and template variables. */
function expressions(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) expressions(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if ((k === 'expr' || k === 'query') && typeof v === 'string') out.push(v);
      else expressions(v, out);
    }
  }
  return out;
}

test('deploy/grafana/forkd.json queries only metric names forkd exposes', () => {
  const dashboard: unknown = JSON.parse(readFileSync(join(REPO_ROOT, 'deploy/grafana/forkd.json'), 'utf8'));
  const exprs = expressions(dashboard);
  const used = new Set(exprs.flatMap((e) => e.match(/\bforkd_[a-zA-Z0-9_:]*/g) ?? []));
  assert.ok(used.size >= 20, `the dashboard queries ${used.size} names`);
  const known = exposedNames();
  for (const name of used) assert.ok(known.has(name), `${name} is queried but not exposed`);
  for (const must of ['forkd_lifecycle_duration_seconds_bucket', 'forkd_tenant_running_sandboxes', 'forkd_tenant_memory_committed_bytes', 'forkd_node_up']) assert.ok(used.has(must), `the dashboard shows ${must}`);
  // The check itself can fail: a name no renderer emits is caught.
  assert.equal(known.has('forkd_lifecycle_duration_seconds'), false, 'a histogram is queried by its series, not its family name');
});
