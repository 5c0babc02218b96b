import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ndjson, sandboxInfo, sendJson, startFakeServer, type FakeServer } from '@forkd/sdk/testing';
import { cliVersion } from './version.js';
import { COMMANDS } from './commands/registry.js';

const DIST = fileURLToPath(new URL('.', import.meta.url));
const REPO = fileURLToPath(new URL('../../../', import.meta.url));

let dir = '';
let server: FakeServer | undefined;

/** The bundle as ./forkd runs it, made from this build (scripts/bundle-cli.mjs) into a directory of its own. */
before(async () => {
  dir = await mkdtemp(join(DIST, '.bundle-test-'));
  await run(process.execPath, [join(REPO, 'scripts/bundle-cli.mjs'), join(dir, 'bundle')]);
  server = await startFakeServer((req, res) => {
    if (req.method === 'GET') return sendJson(res, 200, sandboxInfo('sbx-1'));
    res.writeHead(200, { 'content-type': 'application/x-ndjson' });
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    res.end(ndjson([{ type: 'started', pid: 9 }, { type: 'stdout', data: b64('out\n') }, { type: 'stderr', data: b64('err\n') }, { type: 'exit', exitCode: 3, signal: null, oomKilled: false }]));
  });
});
after(async () => {
  await server?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function run(file: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    // stdin: /dev/null, as a script's call has it.
    const child = spawn(file, args, { env: { ...process.env, FORKD_API_KEY: 'k', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
  });
}

const bundled = (args: string[], env?: NodeJS.ProcessEnv) => run(process.execPath, ['--experimental-websocket', '--no-warnings', join(dir, 'bundle/forkd.js'), ...args], env);
const unbundled = (args: string[], env?: NodeJS.ProcessEnv) => run(process.execPath, ['--experimental-websocket', '--no-warnings', join(DIST, 'main.js'), ...args], env);

test('the bundle answers as dist/main.js does: --version, --help (commands in chunks of their own), exec\'s streams and exit code, errors', async () => {
  assert.deepEqual(await bundled(['--version']), { code: 0, stdout: `forkd ${cliVersion()}\n`, stderr: '' });
  for (const c of ['exec', 'serve', 'template', 'mcp']) assert.deepEqual(await bundled([c, '--help']), await unbundled([c, '--help']), c);
  const env = { FORKD_URL: server!.url };
  const exec = await bundled(['exec', 'sbx-1', '--', 'x'], env);
  assert.deepEqual(exec, { code: 3, stdout: 'out\n', stderr: 'err\n' });
  assert.deepEqual(exec, await unbundled(['exec', 'sbx-1', '--', 'x'], env));
  const down = await bundled(['ls'], { FORKD_URL: 'http://127.0.0.1:1' });
  assert.equal(down.code, 1);
  assert.match(down.stderr, /^error: UNAVAILABLE: cannot reach forkd at http:\/\/127\.0\.0\.1:1/);
  const usage = await bundled(['exec', 'sbx-1']);
  assert.deepEqual(usage, await unbundled(['exec', 'sbx-1']));
  assert.equal(usage.code, 2);
});

test('the bundle is a few files: the entry and a chunk per command; the other packages (protocol: one ForkdError class) stay outside', async () => {
  const files = (await readdir(join(dir, 'bundle'), { recursive: true })).filter((f) => f.endsWith('.js'));
  assert.ok(files.includes('forkd.js'));
  assert.ok(files.length < COMMANDS.length + 25, files.join(' '));
  const hooks = join(dir, 'hooks.mjs');
  await writeFile(hooks, `export async function resolve(s, c, next) { const r = await next(s, c); process._rawDebug('LOADED ' + r.url); return r; }\n`);
  const register = join(dir, 'register.mjs');
  await writeFile(register, `import { register } from 'node:module';\nregister(${JSON.stringify(`file://${hooks}`)});\n`);
  const r = await run(process.execPath, ['--experimental-websocket', '--no-warnings', '--import', register, join(dir, 'bundle/forkd.js'), 'exec', 'sbx-1', '--', 'x'], { FORKD_URL: server!.url });
  assert.equal(r.code, 3, r.stderr);
  const loaded = [...r.stderr.matchAll(/^LOADED (file:.*)$/gm)].map((m) => fileURLToPath(m[1]!));
  assert.ok(new Set(loaded).size <= 16, loaded.join('\n'));
  assert.deepEqual(
    [...new Set(loaded.filter((f) => !f.startsWith(join(dir, 'bundle'))).map((f) => f.replace(/^.*\/packages\//, '')))].sort(),
    ['protocol/dist/errors.js', 'protocol/dist/grant-syntax.js', 'protocol/dist/stream-position.js', 'protocol/dist/tenant-header.js'].filter((f) => loaded.some((l) => l.endsWith(f))),
    'exec loads the bundle and protocol\'s small modules only',
  );
  assert.ok(loaded.some((f) => f.endsWith('protocol/dist/errors.js')));
  for (const f of files) assert.doesNotMatch(await readFile(join(dir, 'bundle', f), 'utf8'), /class ForkdError\b/, f);
});
