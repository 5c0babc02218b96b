import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from './config.js';

/**
 * The README's settings table is the operator's list of what forkd reads:
 * every FORKD_* variable the shipped code reads must be a row of it, and
 * every FORKD_* variable the README or docs/api.md names must be read.
 */
const PACKAGES = ['protocol', 'sdk', 'mcp', 'cli', 'server'];

/** FORKD_* names that are not settings: each says why. */
const NOT_SETTINGS: Record<string, string> = {
  FORKD_CRASH_AT: 'fault injection for the crash-safety tests (shared/crash-point.ts)',
  FORKD_CRIU_ASK_VERSION: "a bench lever (setup.ts's CRIU wrapper)",
  FORKD_CRIU_DUMP_CONFIG: "set by forkd for criu's wrapper (its relay, see host-tools' README), not by anyone else",
  FORKD_CRIU_SAVE_REQUEST: "set by forkd for criu's wrapper (where its relay keeps runc's dump request, see runc-direct-dump.ts), not by anyone else",
  FORKD_UFFD_SOCK: "set by forkd for CRIU's preload library, not by anyone else",
  FORKD_LAZY_WAIT_MS: "set by forkd for CRIU's preload library, not by anyone else",
  FORKD_LAZY_PID: "set by forkd for CRIU's preload library, not by anyone else",
  FORKD_UFFD_UID: "set by forkd for CRIU's preload library, not by anyone else",
  FORKD_GUEST_PROTOCOL: 'a constant (the guest protocol version)',
  FORKD_GUEST_PROTOCOL_MIN: 'a constant (the oldest guest protocol spoken)',
};

const NAME = /FORKD_[A-Z0-9_]*[A-Z0-9](?![A-Z0-9_])/g;

function shippedSources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'testing' && e.name !== 'e2e') out.push(...shippedSources(p));
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts')) out.push(p);
  }
  return out;
}

function namesIn(text: string): Set<string> {
  return new Set(text.match(NAME) ?? []);
}

/** The variables of the README's "## Configuration" table (its first column). */
export function settingsTable(readme: string): Set<string> {
  const section = readme.split(/^## Configuration$/m)[1]?.split(/^## /m)[0];
  assert.ok(section, 'README.md has a "## Configuration" section');
  const rows = section.split('\n').filter((l) => l.startsWith('| '));
  return new Set(rows.flatMap((r) => [...namesIn(r.split(' | ')[0]!)]));
}

const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');

test('every FORKD_* variable the code reads is in the README settings table', () => {
  const table = settingsTable(readme);
  const missing = new Map<string, string>();
  for (const pkg of PACKAGES) {
    for (const file of shippedSources(join(REPO_ROOT, 'packages', pkg, 'src'))) {
      for (const name of namesIn(readFileSync(file, 'utf8'))) if (!table.has(name) && !(name in NOT_SETTINGS)) missing.set(name, file.slice(REPO_ROOT.length + 1));
    }
  }
  assert.deepEqual([...missing].map(([n, f]) => `${n} (${f})`), [], 'read in code, missing from README.md "## Configuration"');
});

test('every FORKD_* variable README.md and docs/api.md name is one the code reads', () => {
  const read = new Set<string>();
  for (const pkg of PACKAGES) for (const file of shippedSources(join(REPO_ROOT, 'packages', pkg, 'src'))) for (const n of namesIn(readFileSync(file, 'utf8'))) read.add(n);
  for (const n of namesIn(readFileSync(join(REPO_ROOT, 'forkd'), 'utf8'))) read.add(n);
  for (const doc of ['README.md', 'docs/api.md']) {
    const named = [...namesIn(readFileSync(join(REPO_ROOT, doc), 'utf8'))].filter((n) => !read.has(n));
    assert.deepEqual(named, [], `${doc} names variables nothing reads`);
  }
});

test('settingsTable reads the first column of the Configuration table only', () => {
  const t = settingsTable('## Configuration\n\n| variable | default |\n|---|---|\n| `FORKD_A` / `FORKD_B_C` | `FORKD_NOT` |\n\nText FORKD_D.\n\n## Next\n\n| `FORKD_E` | x |\n');
  assert.deepEqual([...t].sort(), ['FORKD_A', 'FORKD_B_C']);
});
