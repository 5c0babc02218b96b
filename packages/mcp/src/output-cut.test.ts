import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundedText, cutNote, cutUtf8 } from './output-cut.js';

test('text within the cap is kept whole', () => {
  assert.deepEqual(cutUtf8('héllo', 6), { text: 'héllo', cutBytes: 0 });
});

test('a cut never splits a character and counts every byte left out', () => {
  // 'é' is 2 bytes, '€' 3, '😀' 4: every cap inside one of them must back off to its start.
  const s = 'aé€😀b';
  const total = Buffer.byteLength(s);
  for (let cap = 0; cap < total; cap++) {
    const r = cutUtf8(s, cap);
    assert.ok(!r.text.includes('\uFFFD'), `cap ${cap}: ${JSON.stringify(r.text)}`);
    assert.ok(s.startsWith(r.text), `cap ${cap}`);
    assert.ok(Buffer.byteLength(r.text) <= cap);
    assert.equal(Buffer.byteLength(r.text) + r.cutBytes, total);
  }
  assert.equal(cutUtf8(s, 3).text, 'aé');
  assert.equal(cutUtf8(s, 5).text, 'aé');
  assert.equal(cutUtf8(s, 6).text, 'aé€');
});

test('chunks beyond the cap are counted, not kept', () => {
  const b = new BoundedText(10);
  for (let i = 0; i < 1000; i++) b.push(Buffer.from('0123456789'));
  const r = b.result();
  assert.equal(r.text, '0123456789');
  assert.equal(r.cutBytes, 9990);
});

test('the note says how much was left out', () => {
  assert.match(cutNote('stdout', 9990), /stdout cut: 9990 more bytes/);
});
