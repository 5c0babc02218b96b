import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ratioText } from './report.js';

const row = (forkd: number[], podman?: number[], lowerIsBetter?: boolean) => ({ group: 'g', name: 'n', unit: 'ms', forkd, ...(podman ? { podman } : {}), ...(lowerIsBetter === undefined ? {} : { lowerIsBetter }) });

test('a ratio is how many times better forkd does; none where one side has nothing to compare; ∞ where forkd needs none of it', () => {
  assert.equal(ratioText(row([10, 10, 10], [30, 30, 30])), '3.0×');
  assert.equal(ratioText(row([40], [10], false)), '4.0×', 'a capacity: more is better');
  assert.equal(ratioText(row([10])), '-', 'no Podman counterpart');
  assert.equal(ratioText(row([0, 0], [0.76, 0.8])), '∞', 'a hibernated sandbox holds no host memory');
  assert.equal(ratioText(row([0], [0])), '-');
  assert.equal(ratioText(row([0], [5], false)), '-', 'a capacity of zero is not infinitely better');
});
