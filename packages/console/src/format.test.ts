import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAge, formatBytes, formatCpus, formatMb, formatPercent, parsePairs } from './format.js';

test('formatBytes', () => {
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(1023), '1023 B');
  assert.equal(formatBytes(1536), '1.5 KiB');
  assert.equal(formatBytes(512 * 1024 * 1024), '512 MiB');
  assert.equal(formatBytes(10 * 1024 ** 3), '10 GiB');
  assert.equal(formatBytes(-1), '–');
  assert.equal(formatBytes(Number.NaN), '–');
});

test('formatMb, formatCpus, formatPercent', () => {
  assert.equal(formatMb(512), '512 MiB');
  assert.equal(formatMb(undefined), 'default');
  assert.equal(formatCpus(1), '1 CPU');
  assert.equal(formatCpus(0.5), '0.5 CPUs');
  assert.equal(formatPercent(3.44), '3.4%');
  assert.equal(formatPercent(57.4), '57%');
});

test('formatAge: seconds, minutes, hours, days; a future or bad time is not negative', () => {
  const now = Date.parse('2026-01-02T00:00:00Z');
  assert.equal(formatAge('2026-01-01T23:59:15Z', now), '45s');
  assert.equal(formatAge('2026-01-01T23:57:00Z', now), '3m');
  assert.equal(formatAge('2026-01-01T22:00:00Z', now), '2h');
  assert.equal(formatAge('2025-12-29T00:00:00Z', now), '4d');
  assert.equal(formatAge('2026-01-03T00:00:00Z', now), '0s');
  assert.equal(formatAge('nope', now), '–');
});

test('parsePairs: comma or newline separated k=v; a value may hold =; a bare word is an error', () => {
  assert.deepEqual(parsePairs('a=1, b = 2\nc=x=y'), { ok: true, value: { a: '1', b: '2', c: 'x=y' } });
  assert.deepEqual(parsePairs('  '), { ok: true, value: {} });
  assert.equal(parsePairs('a=1, oops').ok, false);
  assert.equal(parsePairs('=1').ok, false);
});
