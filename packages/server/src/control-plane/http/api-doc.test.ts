import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CODES } from '@forkd/protocol';
import { REPO_ROOT } from '../../shared/config.js';
import { ROUTES } from './routes/index.js';

/** docs/api.md is the API's reference: its tables must be the routes served and the closed error table. */
const API_MD = readFileSync(join(REPO_ROOT, 'docs/api.md'), 'utf8');

/** `METHOD /path` of every endpoint row (`| GET / PUT | \`/v1/x/{id}?q=\` | ...`), query strings left out. */
export function documentedEndpoints(md: string): string[] {
  const out: string[] = [];
  for (const m of md.matchAll(/^\| ((?:GET|POST|PUT|DELETE)(?: \/ (?:GET|POST|PUT|DELETE))*) \| `([^`?]+)[^`]*` \|/gm)) {
    for (const method of m[1]!.split(' / ')) out.push(`${method} ${m[2]}`);
  }
  return out;
}

/** `CODE status` of every row of the error table (`| \`CODE\` | 404 | ...`). */
export function documentedErrorCodes(md: string): string[] {
  return [...md.matchAll(/^\| `([A-Z_]+)` \| (\d{3}) \|/gm)].map((m) => `${m[1]} ${m[2]}`);
}

test('docs/api.md documents every route served, and only those', () => {
  const served = ROUTES.map((r) => `${r.method.toUpperCase()} ${r.path.replace(/:([a-z]+)/g, '{$1}')}`);
  const documented = documentedEndpoints(API_MD);
  assert.deepEqual(served.filter((r) => !documented.includes(r)), [], 'served, missing from docs/api.md');
  assert.deepEqual(documented.filter((r) => !served.includes(r)), [], 'in docs/api.md, not served');
  assert.equal(new Set(documented).size, documented.length, 'an endpoint documented twice');
});

test("docs/api.md's error table is the protocol's closed code list, with each code's status", () => {
  assert.deepEqual(documentedErrorCodes(API_MD).sort(), Object.entries(ERROR_CODES).map(([c, s]) => `${c} ${s}`).sort());
});

test('the table readers take rows, not prose', () => {
  const md = 'See `GET /v1/x`.\n| GET / PUT | `/v1/a/{id}?path=` | b |\n| POST | `/metrics` | |\n| `NOT_FOUND` | 404 | gone |\nthe `INTERNAL` 500 code\n';
  assert.deepEqual(documentedEndpoints(md), ['GET /v1/a/{id}', 'PUT /v1/a/{id}', 'POST /metrics']);
  assert.deepEqual(documentedErrorCodes(md), ['NOT_FOUND 404']);
});
