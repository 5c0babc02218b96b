import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SandboxTimers } from './sandbox-timers.js';
import { ManualClock } from '../../testing/manual-clock.js';

test('one timer per sandbox: arming again replaces it, cancel removes it', () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const t = new SandboxTimers((id) => fired.push(id), clock);
  t.arm('a', clock.now() + 1000);
  t.arm('b', clock.now() + 500);
  t.arm('a', clock.now() + 2000);
  assert.equal(t.size, 2);
  assert.equal(clock.pending, 2, 'the replaced timer is cleared, not left to fire');
  clock.advance(1500);
  assert.deepEqual(fired, ['b']);
  t.cancel('a');
  clock.advance(10_000);
  assert.deepEqual(fired, ['b']);
  assert.equal(t.size, 0);
});

test('an instant that has passed fires at once; one beyond setTimeout\'s range is reached in steps', () => {
  const clock = new ManualClock();
  const fired: string[] = [];
  const t = new SandboxTimers((id) => fired.push(id), clock);
  t.arm('past', clock.now() - 5000);
  clock.advance(0);
  assert.deepEqual(fired, ['past']);
  const far = clock.now() + 40 * 24 * 3600 * 1000;
  t.arm('far', far);
  clock.advance(2 ** 31 - 1);
  assert.deepEqual(fired, ['past'], 'not at the first step');
  assert.equal(t.dueAt('far'), far, 're-armed for the rest');
  clock.advance(far - clock.now());
  assert.deepEqual(fired, ['past', 'far']);
});

test('10,000 idle sandboxes cost one pending timer each and nothing until due', () => {
  const clock = new ManualClock();
  let fired = 0;
  const t = new SandboxTimers(() => fired++, clock);
  for (let i = 0; i < 10_000; i++) t.arm(`s${i}`, clock.now() + 300_000 + i);
  assert.equal(clock.pending, 10_000);
  clock.advance(299_999);
  assert.equal(fired, 0);
  clock.advance(10_000);
  assert.equal(fired, 10_000);
  assert.equal(t.size, 0);
});
