import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { BuildStep } from '@forkd/sdk';
import { BuildEstimate } from './build-estimate.js';
import { progressPrinter } from './commands/template.js';

const step = (index: number, status: BuildStep['status'], durationMs?: number): BuildStep => ({ index, total: 3, instruction: `RUN step${index}`, status, ...(durationMs !== undefined ? { durationMs } : {}) });

test('a build with the last build\'s number of steps gets the time left from its durations; another gets none', () => {
  const last = [{ name: 'RUN step1', ms: 1_000 }, { name: 'RUN step2', ms: 20_000 }, { name: 'RUN step3', ms: 4_000 }];
  const e = new BuildEstimate(last);
  assert.equal(e.onStep(step(1, 'start')), 25_000);
  assert.equal(e.onStep(step(1, 'cached', 3)), undefined);
  assert.equal(e.onStep(step(2, 'start')), 24_000);
  assert.equal(new BuildEstimate(last.slice(1)).onStep(step(1, 'start')), undefined, 'the Dockerfile changed');
  assert.equal(new BuildEstimate(undefined).onStep(step(1, 'start')), undefined, 'never built');
});

test('a cached step keeps the time it took when it last ran', () => {
  const e = new BuildEstimate([{ name: 'RUN step1', ms: 9_000 }, { name: 'RUN other', ms: 8_000 }, { name: 'RUN step3', ms: 7_000 }]);
  e.onStep(step(1, 'cached', 3));
  e.onStep(step(2, 'cached', 4));
  e.onStep(step(3, 'done', 6_000));
  assert.deepEqual(e.ran, [{ name: 'RUN step1', ms: 9_000 }, { name: 'RUN step2', ms: 4 }, { name: 'RUN step3', ms: 6_000 }]);
});

test('what a build records: every step in order once all finished, nothing for a build cut short', () => {
  const e = new BuildEstimate(undefined);
  e.onStep(step(1, 'start'));
  e.onStep(step(1, 'cached', 2));
  e.onStep(step(2, 'start'));
  e.onStep(step(2, 'done', 7_000));
  assert.equal(e.ran, undefined, 'not all finished yet');
  e.onStep(step(3, 'start'));
  e.onStep(step(3, 'done', 900));
  assert.deepEqual(e.ran, [{ name: 'RUN step1', ms: 2 }, { name: 'RUN step2', ms: 7_000 }, { name: 'RUN step3', ms: 900 }]);
  const cut = new BuildEstimate(undefined);
  cut.onStep(step(2, 'done', 5));
  assert.equal(cut.ran, undefined);
});

test('build progress not on a terminal: plain lines, the step line with the time left, no escapes', () => {
  let text = '';
  const out = { isTTY: false, write: (s: string) => (text += s) };
  const print = progressPrinter(out, new BuildEstimate([{ name: 'a', ms: 2_000 }, { name: 'b', ms: 30_000 }, { name: 'c', ms: 1_000 }]));
  print('Step 2/3 : RUN make', step(2, 'start'));
  print('compiling\nlinking');
  print(' ---> done in 29.0s', step(2, 'done', 29_000));
  assert.equal(text, 'Step 2/3 : RUN make (~31s left)\ncompiling\nlinking\n ---> done in 29.0s\n');
});
