import { test } from 'node:test';
import assert from 'node:assert/strict';
import { polylinePoints } from './chart.js';

test('polylinePoints: left to right, 0 at the bottom, max at the top, clamped; one or no sample', () => {
  assert.equal(polylinePoints([0, 50, 100], 100, 100, 40), '0,40 50,20 100,0');
  assert.equal(polylinePoints([200, -5], 100, 10, 10), '0,0 10,10');
  assert.equal(polylinePoints([5], 10, 100, 40), '0,20');
  assert.equal(polylinePoints([], 10, 100, 40), '');
  assert.equal(polylinePoints([3], 0, 100, 40), '0,0', 'a zero max draws against 1');
});
