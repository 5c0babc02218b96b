import { test } from 'node:test';
import assert from 'node:assert/strict';
import { StepProgress } from './step-progress.js';

function output(isTTY: boolean) {
  const out = { text: '', isTTY, columns: 120, write: (s: string) => ((out.text += s), true) };
  return out;
}

const PLAN = [{ name: 'packages', expectedMs: 60_000 }, { name: 'criu', expectedMs: 30_000 }, { name: 'pool', expectedMs: 5_000 }];

test('not a terminal: one plain line per event, with the step\'s place and the time left; no escapes, no redraws', () => {
  let now = 0;
  const out = output(false);
  const p = new StepProgress(out, { plan: PLAN, now: () => now });
  p.event({ step: 'packages' });
  p.event({ step: 'packages', detail: '  apt-get   install criu ' });
  now = 20_000;
  p.event({ step: 'packages', done: true, ms: 20_000 });
  p.event({ step: 'pool' });
  now = 21_000;
  p.fail();
  assert.equal(out.text, ['step 1/3 · packages ... (~2m left)', '  apt-get install criu', 'packages: done (20.0s)', 'step 2/2 · pool ... (~5s left)', 'pool: failed', ''].join('\n'));
  assert.doesNotMatch(out.text, /\r|\x1b/);
  assert.deepEqual(p.ran, [{ name: 'packages', ms: 20_000 }]);
});

test('without a plan: the lines as before, no place and no estimate', () => {
  const out = output(false);
  const p = new StepProgress(out, { now: () => 0 });
  p.event({ step: 'a' });
  p.event({ step: 'b' });
  p.event({ step: 'b', done: true, ms: 1500 });
  assert.equal(out.text, 'a ...\na: done (0ms)\nb ...\nb: done (1.5s)\n');
});

test('a terminal: the running step redrawn in place with its place, elapsed time and time left, then frozen with ✓', () => {
  let now = 0;
  const out = output(true);
  const p = new StepProgress(out, { plan: PLAN, now: () => now });
  p.event({ step: 'criu' });
  now = 12_000;
  p.event({ step: 'criu', detail: 'building' });
  const line = out.text.split('\r\x1b[K').at(-1)!;
  assert.match(line, /^. step 1\/2 · criu · 12s · ~23s left {2}.*building/);
  p.event({ step: 'criu', done: true, ms: 12_000 });
  assert.match(out.text, /\r\x1b\[K.*✓.* criu .*12\.0s.*\n$/);
  assert.deepEqual(p.ran, [{ name: 'criu', ms: 12_000 }]);
});
