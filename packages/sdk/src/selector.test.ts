import { test } from 'node:test';
import assert from 'node:assert/strict';
import { selectorObject, selectorSegment } from './selector.js';
import { normaliseSignal } from './sandbox.js';

test('process selectors', () => {
  assert.equal(selectorSegment(12), '12');
  assert.equal(selectorSegment('12'), '12');
  assert.equal(selectorSegment('tag:web'), 'tag:web');
  assert.equal(selectorSegment('web'), 'tag:web');
  assert.equal(selectorSegment({ tag: 'a:b' }), 'tag:a%3Ab');
  assert.deepEqual(selectorObject('tag:web'), { tag: 'web' });
  assert.deepEqual(selectorObject({ pid: 3 }), { pid: 3 });
  assert.throws(() => selectorObject('tag:'), { code: 'INVALID_ARGUMENT' });
});

test('signal names are normalised', () => {
  assert.equal(normaliseSignal('term'), 'SIGTERM');
  assert.equal(normaliseSignal('SIGKILL'), 'SIGKILL');
  assert.equal(normaliseSignal('9'), 9);
  assert.equal(normaliseSignal(15), 15);
});
