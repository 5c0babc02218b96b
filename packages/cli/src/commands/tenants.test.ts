import { test } from 'node:test';
import assert from 'node:assert/strict';
import { UsageError } from '../usage-error.js';
import { limitsTable, mergedOverrides, parseTenantsArgs } from './tenants.js';

test('tenants limits: numbers, unlimited and default; only the limits named change', () => {
  const a = parseTenantsArgs(['limits', 'acme', '--sandboxes', '5', '--memory', 'unlimited', '--disk', 'default', '--cpus', '2.5']);
  assert.deepEqual(a, { tenant: 'acme', changes: { runningSandboxes: 5, memoryMb: null, cpus: 2.5, diskMb: undefined }, reset: false, json: false });
  assert.deepEqual(mergedOverrides({ diskMb: 100, snapshots: 3, memoryMb: 10 }, a), { snapshots: 3, runningSandboxes: 5, memoryMb: null, cpus: 2.5 });
  assert.deepEqual(mergedOverrides({ snapshots: 3 }, parseTenantsArgs(['limits', 'acme', '--reset', '--disk', '7'])), { diskMb: 7 });
  assert.deepEqual(parseTenantsArgs(['limits', 'acme', '--json']), { tenant: 'acme', changes: {}, reset: false, json: true });
  for (const bad of [['limits'], ['limits', 'Not Ok'], ['limits', 'acme', '--sandboxes', '1.5'], ['limits', 'acme', '--memory', '-1'], ['limits', 'acme', '--cpus', 'lots'], ['quota', 'acme'], [], ['limits', 'a', 'b']]) {
    assert.throws(() => parseTenantsArgs(bad), UsageError, bad.join(' '));
  }
});

test('the table says what is set by the tenant and what by the server', () => {
  const out = limitsTable({
    tenant: 'acme',
    limits: { runningSandboxes: 5, memoryMb: null, cpus: null, snapshots: 10, diskMb: 20480 },
    overrides: { runningSandboxes: 5 },
    usage: { runningSandboxes: 2, memoryMb: 1024, cpus: 2, snapshots: 3, diskMb: 20480 },
  });
  assert.match(out, /runningSandboxes\s+5\s+2\s+tenant/);
  assert.match(out, /memoryMb\s+unlimited\s+1024 MB\s+server default/);
  assert.match(out, /diskMb\s+20480 MB\s+20480 MB/);
});
