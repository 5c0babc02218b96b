import { test } from 'node:test';
import assert from 'node:assert/strict';
import { edgePath, layoutTree, type TreeLike } from './lineage-layout.js';

const t = (id: string, ...children: TreeLike<string>[]): TreeLike<string> => ({ sandbox: id, children });
const at = (l: ReturnType<typeof layoutTree<string>>) => Object.fromEntries(l.nodes.map((n) => [n.sandbox, [n.x, n.y]]));

test('layoutTree: a lone sandbox is one cell', () => {
  const l = layoutTree(t('a'));
  assert.deepEqual(at(l), { a: [0, 0] });
  assert.deepEqual([l.width, l.height, l.edges.length], [1, 1, 0]);
});

test('layoutTree: leaves left to right in order, parents centred over their children, one row per level', () => {
  const l = layoutTree(t('root', t('a', t('a1'), t('a2'), t('a3')), t('b'), t('c', t('c1'))));
  assert.deepEqual(at(l), { root: [2.5, 0], a: [1, 1], a1: [0, 2], a2: [1, 2], a3: [2, 2], b: [3, 1], c: [4, 1], c1: [4, 2] });
  assert.deepEqual([l.width, l.height], [5, 3]);
  assert.equal(l.nodes[0]!.sandbox, 'root', 'the root comes first');
  assert.deepEqual(l.edges.map((e) => `${e.from.sandbox}>${e.to.sandbox}`).sort(), ['a>a1', 'a>a2', 'a>a3', 'c>c1', 'root>a', 'root>b', 'root>c']);
});

test('layoutTree: no two nodes share a cell, every child is one row below its parent (random trees)', () => {
  let seed = 7;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let round = 0; round < 50; round++) {
    let n = 0;
    const grow = (depth: number): TreeLike<string> => t(`n${n++}`, ...Array.from({ length: depth < 4 ? Math.floor(rnd() * 4) : 0 }, () => grow(depth + 1)));
    const l = layoutTree(grow(0));
    assert.equal(l.nodes.length, n);
    const cells = new Set(l.nodes.map((p) => `${p.x},${p.y}`));
    assert.equal(cells.size, n, 'distinct cells');
    for (const e of l.edges) assert.equal(e.to.y, e.from.y + 1);
    for (const p of l.nodes) assert.ok(p.x >= 0 && p.x < Math.max(1, l.width));
  }
});

test('layoutTree: a chain thousands deep does not overflow the stack', () => {
  let tree = t('leaf');
  for (let i = 0; i < 20_000; i++) tree = t(`n${i}`, tree);
  const l = layoutTree(tree);
  assert.equal(l.height, 20_001);
  assert.equal(l.width, 1);
});

test('edgePath: from the middle of the parent box bottom to the middle of the child top', () => {
  assert.equal(edgePath({ x: 1, y: 0 }, { x: 0, y: 1 }, 100, 80, 40), 'M150,40 C150,60 50,60 50,80');
});
