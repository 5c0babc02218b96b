import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OwnerSlots } from './owner-slots.js';

test('owner slots: bounded per owner and in all, each given back once', () => {
  const slots = new OwnerSlots({ total: 2, perOwner: 1 });
  const x = slots.take('x');
  assert.ok(x);
  assert.equal(slots.take('x'), undefined, 'per owner');
  const y = slots.take('y');
  assert.ok(y);
  assert.equal(slots.take('z'), undefined, 'in all');
  y();
  y();
  assert.equal(slots.inUse, 1, 'a slot is given back once');
  x();
  assert.equal(slots.inUse, 0);
  assert.equal(slots.declined, 2);
  assert.ok(slots.take('z'), 'a freed slot is taken again');
});

test("owner slots: forkd's own takes (no owner) are bounded only in all", () => {
  const slots = new OwnerSlots({ total: 3, perOwner: 1 });
  const own = [slots.take(undefined), slots.take(undefined)];
  assert.ok(own.every(Boolean), 'past the per-owner bound');
  assert.ok(slots.take('x'));
  assert.equal(slots.take(undefined), undefined, 'in all');
  own[0]!();
  own[0]!();
  assert.equal(slots.inUse, 2);
  assert.ok(slots.take(undefined));
});
