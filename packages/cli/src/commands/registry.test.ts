import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { COMMANDS } from './registry.js';

const MAIN = fileURLToPath(new URL('../main.js', import.meta.url));

/** A module hook that appends every URL the CLI resolves to $LOAD_LOG. */
const HOOKS = `import { appendFileSync } from 'node:fs';
export async function resolve(specifier, context, next) {
  const r = await next(specifier, context);
  appendFileSync(process.env.LOAD_LOG, r.url + '\\n');
  return r;
}
`;

/** Runs `forkd ARGS` against a closed port and returns the status and the package files it loaded, relative to packages/ or node_modules/. */
async function loaded(args: string[]): Promise<{ code: number; stderr: string; modules: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-cli-loads-'));
  try {
    await writeFile(join(dir, 'hooks.mjs'), HOOKS);
    await writeFile(join(dir, 'register.mjs'), `import { register } from 'node:module';\nregister(${JSON.stringify(new URL(`file://${join(dir, 'hooks.mjs')}`).href)});\n`);
    const log = join(dir, 'log');
    await writeFile(log, '');
    const env = { ...process.env, LOAD_LOG: log, FORKD_URL: 'http://127.0.0.1:1', FORKD_API_KEY: 'k' };
    const { code, stderr } = await new Promise<{ code: number; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['--experimental-websocket', '--no-warnings', '--import', join(dir, 'register.mjs'), MAIN, ...args], { env }, (err, _out, stderr) => resolve({ code: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stderr }));
      child.stdin?.end();
    });
    const modules = (await readFile(log, 'utf8'))
      .split('\n')
      .filter((u) => u.startsWith('file:'))
      .map((u) => fileURLToPath(u).replace(/^.*\/(packages|node_modules)\//, '$1/'));
    return { code, stderr, modules: [...new Set(modules)] };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const SERVER = /^packages\/server\/|^node_modules\/@forkd\/server\//;
const SCHEMAS = /^node_modules\/zod\/|^packages\/protocol\/dist\/index\.js$/;

test('--version loads the CLI alone: no SDK, no schemas, no server', async () => {
  const r = await loaded(['--version']);
  assert.equal(r.code, 0, r.stderr);
  assert.ok(r.modules.includes('packages/cli/dist/cli.js'), 'the hook saw the CLI load');
  assert.deepEqual(r.modules.filter((m) => !m.startsWith('packages/cli/') && m !== 'packages/protocol/dist/errors.js'), []);
});

test('exec loads the SDK and its command, not the schemas (zod), the server or the other commands', async () => {
  const r = await loaded(['exec', 'sbx-1', '--', 'true']);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /^error: UNAVAILABLE: /);
  assert.ok(r.modules.includes('packages/sdk/dist/index.js'), 'the hook saw the SDK load');
  assert.deepEqual(r.modules.filter((m) => SERVER.test(m) || SCHEMAS.test(m) || m.startsWith('packages/mcp/')), []);
  assert.deepEqual(r.modules.filter((m) => m.startsWith('packages/cli/dist/commands/') && !/\/(exec|approvals|registry)\.js$/.test(m)), []);
});

test('no client command loads the server package (serve and setup run it)', async () => {
  for (const c of COMMANDS) {
    if (c.name === 'serve' || c.name === 'setup') continue;
    const r = await loaded([c.name, '--help']);
    assert.equal(r.code, 0, `${c.name}: ${r.stderr}`);
    assert.deepEqual(r.modules.filter((m) => SERVER.test(m)), [], c.name);
    if (c.name !== 'mcp') assert.deepEqual(r.modules.filter((m) => m.startsWith('packages/mcp/')), [], c.name);
  }
});
