import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatAge, formatBytes, formatClock, formatCpus, formatMb, formatMs, formatPercent, parsePairs } from './format.js';

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

test('formatMs: milliseconds, seconds, minutes; nonsense is a dash', () => {
  assert.equal(formatMs(35.4), '35 ms');
  assert.equal(formatMs(1234), '1.2 s');
  assert.equal(formatMs(12_345), '12 s');
  assert.equal(formatMs(125_000), '2m 5s');
  assert.equal(formatMs(-1), '–');
});

test('formatClock: the time of day today; the date too on another day', () => {
  const now = Date.parse('2026-01-02T12:00:00');
  assert.match(formatClock('2026-01-02T09:08:07', now), /^09:08:07$/);
  assert.match(formatClock('2025-12-31T09:08:07', now), /2025.*09:08:07$|31.*09:08:07$/);
  assert.equal(formatClock('nope', now), '–');
});
