import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './config.js';

/** The repository paths a text names: `packages/…`, `scripts/…`, `deploy/…`, `docs/…` (as code or links). */
export function repoPaths(text: string): string[] {
  return [...new Set([...text.matchAll(/(?<![\w./-])(?:\.\.\/)?((?:packages|scripts|deploy|docs)\/[\w.-]+(?:\/[\w.-]+)*\/?)/g)].map((m) => m[1]!.replace(/[.]$/, '')))];
}

/** Paths that name something outside this repository (another checkout's). */
const ELSEWHERE = new Set(['packages/js-sdk']);

test('every repository path the README and docs/ name exists', () => {
  const docs = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const missing: string[] = [];
  let named = 0;
  for (const doc of docs) {
    for (const p of repoPaths(readFileSync(join(REPO_ROOT, doc), 'utf8'))) {
      named++;
      if (!ELSEWHERE.has(p) && !existsSync(join(REPO_ROOT, p))) missing.push(`${doc}: ${p}`);
    }
  }
  assert.deepEqual(missing, []);
  assert.ok(named > 20, `only ${named} paths found: is the reader broken?`);
});

test('repoPaths finds paths in code, links and prose, not inside other paths', () => {
  const text = 'See `packages/server/src/x.ts`, [guide](docs/kubernetes.md) and ../docs/api.md. Not /var/lib/forkd/docs/x or src/packages/y.';
  assert.deepEqual(repoPaths(text), ['packages/server/src/x.ts', 'docs/kubernetes.md', 'docs/api.md']);
});
