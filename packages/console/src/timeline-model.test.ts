import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { SnapshotInfo } from '@forkd/protocol';
import { parseForkCount, selectedSnapshot, stripItems } from './timeline-model.js';

const snap = (id: string, sizeBytes: number, extra: Partial<SnapshotInfo> = {}): SnapshotInfo => ({
  id, sandboxId: 'sbx-1', createdAt: '2026-01-01T00:00:00Z', frozenMs: 12, sizeBytes, pinned: false, reason: 'policy', ...extra,
});

test('stripItems: bars sized against the largest (never invisible), labelled by name else reason', () => {
  const items = stripItems([snap('a', 100), snap('b', 400, { name: 'before-tests', reason: 'manual' }), snap('c', 1)]);
  assert.deepEqual(items.map((i) => i.sizeFraction), [0.25, 1, 0.05]);
  assert.deepEqual(items.map((i) => i.label), ['policy', 'before-tests', 'policy']);
  assert.deepEqual(stripItems([snap('z', 0)]).map((i) => i.sizeFraction), [0.05], 'all sizes 0: no division by zero');
  assert.deepEqual(stripItems([]), []);
});

test('selectedSnapshot: the one asked for, else the newest, else none', () => {
  const snaps = [snap('a', 1), snap('b', 1)];
  assert.equal(selectedSnapshot(snaps, 'a')?.id, 'a');
  assert.equal(selectedSnapshot(snaps, 'gone')?.id, 'b');
  assert.equal(selectedSnapshot(snaps, null)?.id, 'b');
  assert.equal(selectedSnapshot([], 'a'), undefined);
});

test('parseForkCount: whole numbers from 1; the maximum is left to the API', () => {
  assert.deepEqual(parseForkCount(' 3 '), { ok: true, count: 3 });
  assert.deepEqual(parseForkCount('1000'), { ok: true, count: 1000 });
  for (const bad of ['0', '', '-1', '1.5', 'two', '1e3']) assert.equal(parseForkCount(bad).ok, false, bad);
});
