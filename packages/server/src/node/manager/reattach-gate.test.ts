import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ReattachGate } from './reattach-gate.js';

const settledWithin = async (p: Promise<unknown>, ms = 20) => Promise.race([p.then(() => true), new Promise((r) => setTimeout(() => r(false), ms))]);

test('opened waits for every nested hold of that sandbox only', async () => {
  const g = new ReattachGate();
  assert.equal(await settledWithin(g.opened('a')), true, 'nothing held: open at once');
  const outer = g.hold('a');
  const inner = g.hold('a');
  const other = g.hold('b');
  const opened = g.opened('a');
  inner();
  inner(); // a second call of the same release does not count again
  assert.equal(await settledWithin(opened), false, 'the outer hold still closes it');
  outer();
  assert.equal(await settledWithin(opened), true);
  assert.equal(await settledWithin(g.opened('b')), false, 'b is held apart');
  other();
});

test('changed fires when the last hold is let go of, not before', async () => {
  const g = new ReattachGate();
  const changed = g.changed('a');
  const r1 = g.hold('a');
  const r2 = g.hold('a');
  r1();
  assert.equal(await settledWithin(changed), false);
  r2();
  assert.equal(await settledWithin(changed), true);
  assert.equal(await settledWithin(g.changed('a')), false, 'a new wait waits for the next change');
});
