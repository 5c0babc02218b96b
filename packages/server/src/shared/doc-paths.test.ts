import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './config.js';

/** The repository paths a text names: `packages/…`, `scripts/…`, `deploy/…`, `docs/…` (as code or links). */
export function repoPaths(text: string): string[] {
  return [...new Set([...text.matchAll(/(?<![\w./-])(?:\.\.\/)?((?:packages|scripts|deploy|docs)\/[\w.-]+(?:\/[\w.-]+)*\/?)/g)].map((m) => m[1]!.replace(/[.]$/, '')))];
}

/** GitHub's anchors of a markdown text's headings (code blocks left out). */
export function headingAnchors(md: string): Set<string> {
  const text = md.replace(/^```[\s\S]*?^```/gm, '');
  return new Set([...text.matchAll(/^#+ (.+)$/gm)].map((m) => m[1]!.trim().toLowerCase().replace(/[^\w\s-]/g, '').replace(/\s/g, '-')));
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

test('every link to a heading in the README and docs/ finds it', () => {
  const docs = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const broken: string[] = [];
  for (const doc of docs) {
    const md = readFileSync(join(REPO_ROOT, doc), 'utf8');
    for (const m of md.matchAll(/\]\(([\w./-]*)#([\w-]+)\)/g)) {
      const target = m[1] ? join(doc, '..', m[1]!) : doc;
      if (!headingAnchors(readFileSync(join(REPO_ROOT, target), 'utf8')).has(m[2]!)) broken.push(`${doc}: ${m[0]}`);
    }
  }
  assert.deepEqual(broken, []);
});

test('headingAnchors: as GitHub makes them, not from code blocks', () => {
  assert.deepEqual([...headingAnchors('# A: b (c)\n```sh\n# not one\n```\n### E2B\'s API\n')], ['a-b-c', 'e2bs-api']);
});

test('repoPaths finds paths in code, links and prose, not inside other paths', () => {
  const text = 'See `packages/server/src/x.ts`, [guide](docs/kubernetes.md) and ../docs/api.md. Not /var/lib/forkd/docs/x or src/packages/y.';
  assert.deepEqual(repoPaths(text), ['packages/server/src/x.ts', 'docs/kubernetes.md', 'docs/api.md']);
});
