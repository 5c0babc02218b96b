#!/usr/bin/env node
// E2B's own JS SDK test suite against a real `forkd serve` (issue 14).
//
//   node scripts/e2b-sdk-suite.mjs /path/to/E2B/packages/js-sdk [vitest files…]
//
// The checkout is e2b-dev/E2B at a tag (e.g. e2b@2.45.0); its dependencies
// and vitest come from the npm registry (installed there, not here). A
// throw-away daemon (its own state dir, pool and free ports) is started,
// given an e2b-format key, and the chosen files run with E2B_API_KEY,
// E2B_API_URL and E2B_SANDBOX_URL pointing at it. The default set leaves out
// the files that need https getHost(), egress control or a VM (see README,
// "E2B compatibility"), and the msw request-shape suites, which must run
// without the overrides. Needs root and `npx tsc -b` first.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(fileURLToPath(new URL('..', import.meta.url)));
const { testConfig, disposeNodeDir } = await import(join(root, 'packages/server/dist/testing/test-node.js'));
const { stopDaemonProcess } = await import(join(root, 'packages/server/dist/testing/daemon-process.js'));
const { startE2bDaemon } = await import(join(root, 'packages/server/dist/testing/e2b-daemon.js'));

const sdk = resolve(process.argv[2] ?? '');
if (!existsSync(join(sdk, 'tests/setup.ts'))) {
  console.error('usage: node scripts/e2b-sdk-suite.mjs /path/to/E2B/packages/js-sdk [test files…]');
  process.exit(2);
}
const DEFAULT_FILES = [
  'tests/sandbox/commands', 'tests/sandbox/files', 'tests/sandbox/pty', 'tests/sandbox/git', 'tests/api',
  'tests/sandbox/create.test.ts', 'tests/sandbox/connect.test.ts', 'tests/sandbox/kill.test.ts', 'tests/sandbox/timeout.test.ts',
  'tests/sandbox/metrics.test.ts', 'tests/sandbox/snapshot-api.test.ts', 'tests/sandbox/secure.test.ts', 'tests/sandbox/fork.test.ts',
];
const files = process.argv.length > 3 ? process.argv.slice(3) : DEFAULT_FILES;

const sh = (cmd, args, opts = {}) => {
  const r = spawnSync(cmd, args, { cwd: sdk, stdio: 'inherit', ...opts });
  return r.status ?? 1;
};
if (!existsSync(join(sdk, 'node_modules/vitest'))) {
  // Only what the suite's node tests need: the upstream dev tree (browser and
  // Cloudflare runners, pnpm-only peers) does not resolve with npm. The
  // checkout's package.json is kept as package.json.orig.
  const pkg = JSON.parse(await readFile(join(sdk, 'package.json'), 'utf8'));
  if (!existsSync(join(sdk, 'package.json.orig'))) await writeFile(join(sdk, 'package.json.orig'), JSON.stringify(pkg, null, 2));
  const slim = { name: 'e2b-sdk-suite', private: true, type: 'module', dependencies: pkg.dependencies, devDependencies: { vitest: '^4.1.10', dotenv: '^16.4.5', msw: '^2.12.10', 'error-stack-parser-es': '^2.0.1', '@types/node': '^20.19.19' } };
  await writeFile(join(sdk, 'package.json'), JSON.stringify(slim, null, 2));
  if (sh('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts']) !== 0) process.exit(1);
}
const config = join(sdk, 'vitest.forkd.config.mts');
await writeFile(config, `import { defineConfig } from 'vitest/config'
export default defineConfig({ test: { include: ['tests/**/*.test.ts'], isolate: true, globals: false, testTimeout: 30_000, environment: 'node',
  setupFiles: ['tests/globalFetchFallback.setup.ts'], deps: { interopDefault: true }, env: { ...(process.env as Record<string, string>) } } })
`);

const dir = await mkdtemp(join(tmpdir(), 'forkd-e2b-suite-'));
const cfg = testConfig(dir);
let daemon;
let code = 1;
try {
  const e = await startE2bDaemon(cfg.env, 'e2b-suite');
  daemon = e.daemon;
  const env = { ...process.env, E2B_API_KEY: e.key, E2B_API_URL: e.apiUrl, E2B_SANDBOX_URL: e.envdUrl };
  delete env.E2B_DEBUG;
  code = sh('npx', ['vitest', 'run', '--config', config, ...files], { env });
} finally {
  await stopDaemonProcess(daemon);
  await disposeNodeDir(undefined, dir, cfg.config);
}
process.exit(code);
