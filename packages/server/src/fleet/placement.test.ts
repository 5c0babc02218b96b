import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { NodeRecord } from './fleet-store.js';
import { chooseNode, MIN_POOL_FREE_BYTES } from './placement.js';

const GB = 1024 ** 3;
const node = (id: string, free: number, extra: Partial<NodeRecord['capacity']> & { state?: NodeRecord['state'] } = {}): NodeRecord => {
  const { state = 'active', ...cap } = extra;
  return {
    id,
    url: `http://${id}`,
    sealedToken: 'x',
    state,
    registeredAt: '2026-01-01T00:00:00.000Z',
    lastSeenAt: '2026-01-01T00:00:00.000Z',
    capacity: { memoryBytes: 16 * GB, memoryFreeBytes: free * GB, cpus: 4, poolFreeBytes: 10 * GB, running: 0, paused: 0, templates: ['base'], ...cap },
  };
};

test('placement: most free memory wins among nodes holding the template; ties go to fewer running, then the id', () => {
  const nodes = [node('a', 2), node('b', 8), node('c', 9, { templates: [] })];
  assert.equal(chooseNode(nodes, { memoryBytes: GB, template: 'base' })?.id, 'b', 'c has more room but would need the template first');
  assert.equal(chooseNode(nodes, { memoryBytes: GB, template: 'other' })?.id, 'c', 'nobody holds it: most free memory');
  assert.equal(chooseNode([node('b', 4, { running: 3 }), node('a', 4, { running: 1 })], { memoryBytes: GB })?.id, 'a');
  assert.equal(chooseNode([node('b', 4), node('a', 4)], { memoryBytes: GB })?.id, 'a');
});

test('placement: the source\'s node unless it has no room; never a draining, lost, avoided, full or out-of-disk node', () => {
  const nodes = [node('a', 2), node('b', 8)];
  assert.equal(chooseNode(nodes, { memoryBytes: GB, near: 'a' })?.id, 'a', 'locality beats free memory');
  assert.equal(chooseNode(nodes, { memoryBytes: 3 * GB, near: 'a' })?.id, 'b', 'a cannot take it');
  assert.equal(chooseNode(nodes, { memoryBytes: GB, near: 'gone' })?.id, 'b');
  assert.equal(chooseNode([node('a', 8, { state: 'draining' }), node('b', 1, { state: 'lost' })], { memoryBytes: GB }), undefined);
  assert.equal(chooseNode(nodes, { memoryBytes: GB, avoid: new Set(['b']) })?.id, 'a');
  assert.equal(chooseNode(nodes, { memoryBytes: 9 * GB }), undefined);
  assert.equal(chooseNode([node('a', 8, { poolFreeBytes: MIN_POOL_FREE_BYTES - 1 })], { memoryBytes: GB }), undefined);
});

test('placement: memory placed since the last heartbeat counts, so a burst spreads', () => {
  const nodes = [node('a', 4), node('b', 3)];
  assert.equal(chooseNode(nodes, { memoryBytes: GB }, new Map([['a', 2 * GB]]))?.id, 'b');
  assert.equal(chooseNode(nodes, { memoryBytes: GB, near: 'a' }, new Map([['a', 3.5 * GB]]))?.id, 'b');
});

test('placement: `only` limits the choice to those nodes (a create goes only where its template is)', () => {
  const nodes = [node('a', 2), node('b', 8), node('c', 9)];
  assert.equal(chooseNode(nodes, { memoryBytes: GB, only: new Set(['a']) })?.id, 'a');
  assert.equal(chooseNode(nodes, { memoryBytes: 4 * GB, only: new Set(['a']) }), undefined, 'a is too full: nobody else');
  assert.equal(chooseNode(nodes, { memoryBytes: GB, only: new Set(['a', 'c']) })?.id, 'c');
});
