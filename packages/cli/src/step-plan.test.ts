import { test } from 'node:test';
import assert from 'node:assert/strict';
import { remainingMs, StepPlan } from './step-plan.js';

test('time left: the steps to come plus what is left of the running one, never below zero; unknown when a step to come has no figure', () => {
  const plan = [{ name: 'a', expectedMs: 10_000 }, { name: 'b', expectedMs: 5_000 }, { name: 'c', expectedMs: 1_000 }];
  assert.equal(remainingMs(plan, 0, 0), 16_000);
  assert.equal(remainingMs(plan, 0, 4_000), 12_000);
  assert.equal(remainingMs(plan, 1, 9_000), 1_000, 'a step running over counts as done, the rest still to come');
  assert.equal(remainingMs(plan, 2, 500), 500);
  assert.equal(remainingMs(plan, 3, 0), 0, 'past the end: nothing left');
  assert.equal(remainingMs([...plan, { name: 'd' }], 0, 0), undefined);
  assert.equal(remainingMs([{ name: 'a' }, ...plan.slice(1)], 1, 0), 6_000, 'a step already behind does not matter');
});

test('the plan follows what runs: steps passed over are dropped, unplanned ones inserted (and then the time left is unknown)', () => {
  const p = new StepPlan([{ name: 'a', expectedMs: 1_000 }, { name: 'b', expectedMs: 2_000 }, { name: 'c', expectedMs: 3_000 }, { name: 'd', expectedMs: 4_000 }]);
  assert.deepEqual(p.begin('a'), { index: 1, total: 4 });
  assert.equal(p.remainingMs(0), 10_000);
  assert.deepEqual(p.begin('c'), { index: 2, total: 3 }, 'b had nothing to do');
  assert.equal(p.remainingMs(1_000), 6_000);
  assert.deepEqual(p.begin('new'), { index: 3, total: 4 });
  assert.equal(p.remainingMs(0), undefined);
  assert.deepEqual(p.begin('d'), { index: 4, total: 4 });
  assert.equal(p.remainingMs(0), 4_000);
  assert.deepEqual(new StepPlan([]).begin('x'), { index: 1, total: 1 });
});

test('a step of the same name later in the plan is found after the running one, not before it', () => {
  const p = new StepPlan([{ name: 'a', expectedMs: 1 }, { name: 'b', expectedMs: 1 }, { name: 'a', expectedMs: 5 }]);
  p.begin('a');
  p.begin('b');
  assert.deepEqual(p.begin('a'), { index: 3, total: 3 });
  assert.equal(p.remainingMs(0), 5);
});
