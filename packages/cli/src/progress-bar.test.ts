import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProgressBar } from './progress-bar.js';

test('cp\'s bar: amount, rate and the time left while the size is known and not reached', () => {
  let now = 0;
  let text = '';
  const bar = new ProgressBar({ write: (s: string) => (text += s), columns: 100 }, 'upload', 4 * 1024 * 1024, () => now);
  now = 1_000;
  bar.add(1024 * 1024);
  assert.match(text.split('\r\x1b[K').at(-1)!, /^upload \[#+-+\]  25% 1\.0 MiB \/ 4\.0 MiB {2}1\.0 MiB\/s {2}~3s left$/);
  now = 2_000;
  bar.add(3 * 1024 * 1024);
  bar.finish();
  assert.match(text, /100% 4\.0 MiB \/ 4\.0 MiB {2}2\.0 MiB\/s\n$/);
  let unsized = '';
  const u = new ProgressBar({ write: (s: string) => (unsized += s) }, 'download', undefined, () => now);
  now = 3_000;
  u.add(2048);
  assert.match(unsized, /download 2\.0 KiB {2}2\.0 KiB\/s$/);
});
