import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { liveRows } from './row-line.js';
import { summarize } from './stats.js';

test('live rows: a row is printed when it is pushed, before the section returns', (t) => {
  const lines: string[] = [];
  t.mock.method(console, 'log', (s: string) => void lines.push(s));
  const rows = liveRows();
  rows.push({ name: 'fork', unit: 'ms', target: 'p50 ≤ 30', summary: summarize([10, 20, 30]) });
  assert.deepEqual(lines, ['fork: p50 20.0 ms, p95 30.0 (n 3); target p50 ≤ 30']);
  rows.push({ name: 'resume', unit: 'ms', summary: summarize([5]) });
  assert.equal(lines.length, 2);
  assert.equal([...rows].length, 2);
  assert.equal(JSON.stringify(rows.map((r) => r.name)), '["fork","resume"]');
});

// Every section of `npm run bench` prints each result as it finishes (issue
// 27): none may collect its rows in a plain array and hand them over at its end.
test('live rows: no bench section collects rows in a plain array or returns a literal of them', async () => {
  const src = join(dirname(fileURLToPath(import.meta.url)), '../src');
  for (const f of await readdir(src)) {
    // density prints each row through its own sink (with a shorter figure) as it is known.
    if (!f.endsWith('.ts') || f.endsWith('.test.ts') || f === 'density.ts') continue;
    const text = await readFile(join(src, f), 'utf8');
    assert.doesNotMatch(text, /: (BenchRow|Row)\[\] = \[/, `${f} collects rows in a plain array`);
    assert.doesNotMatch(text, /return \[\s*\{ name:/, `${f} returns its rows only at its end`);
  }
});
