import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OutputTail } from './output-tail.js';

test('keeps exactly the last bytes of any number of chunks, and no more', () => {
  const t = new OutputTail(10);
  assert.equal(t.text(), '');
  t.push(Buffer.from('abc'));
  assert.equal(t.text(), 'abc');
  for (let i = 0; i < 10_000; i++) t.push(Buffer.from(`line-${i}\n`));
  assert.equal(t.text(), 'line-9999\n');
  t.push(Buffer.from('x'.repeat(25) + '0123456789'));
  assert.equal(t.text(), '0123456789');
});
