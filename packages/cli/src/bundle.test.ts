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
    if (String(req.url).includes('sbx-gone')) return sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'no sandbox sbx-gone' } });
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
  // The bin answers a bare --version itself; with anything after it, cli.ts does: the same.
  for (const args of [['--version'], ['-V'], ['version'], ['--version', 'x']]) {
    assert.deepEqual(await bundled(args), { code: 0, stdout: `forkd ${cliVersion()}\n`, stderr: '' }, args.join(' '));
  }
  assert.notEqual(cliVersion(), 'unknown');
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

/** Runs the bundle with a preload that reports, at exit, the files it loaded and whether the ES module loader was set up. */
async function loads(args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; files: string[]; esmLoader: boolean; sourceMaps: boolean; stderr: string }> {
  const preload = join(dir, 'report-loads.cjs');
  await writeFile(preload, `process.on('exit', () => process._rawDebug('LOADS ' + JSON.stringify({ files: Object.keys(require.cache), esm: process.moduleLoadList.some((m) => m.endsWith('esm/loader')), maps: process.sourceMapsEnabled })));\n`);
  const r = await run(process.execPath, ['--experimental-websocket', '--no-warnings', '--require', preload, join(dir, 'bundle/forkd.js'), ...args], { FORKD_URL: server!.url, ...env });
  const report = JSON.parse(/^LOADS (.*)$/m.exec(r.stderr)?.[1] ?? 'null') as { files: string[]; esm: boolean; maps: boolean } | null;
  assert.ok(report, r.stderr);
  return { code: r.code, files: report.files.filter((f) => f !== preload), esmLoader: report.esm, sourceMaps: report.maps, stderr: r.stderr };
}

test('the bundle is CommonJS in a few files: --version and exec load the entry and their own chunks, never the ES module loader or zod', async () => {
  const files = (await readdir(join(dir, 'bundle'), { recursive: true })).filter((f) => f.endsWith('.js'));
  assert.ok(files.includes('forkd.js') && files.includes('cli.js'));
  assert.ok(files.length < COMMANDS.length + 30, files.join(' '));
  const version = await loads(['--version']);
  assert.equal(version.esmLoader, false);
  assert.deepEqual(version.files, [join(dir, 'bundle/forkd.js')], 'a bare --version is the bin alone');
  const help = await loads(['--help']);
  assert.equal(help.esmLoader, false);
  assert.ok(help.files.length <= 8, help.files.join('\n'));
  const exec = await loads(['exec', 'sbx-1', '--', 'x']);
  assert.equal(exec.code, 3, exec.stderr);
  assert.equal(exec.esmLoader, false, 'import() of a chunk sets up the ES module loader');
  assert.ok(exec.files.length <= 16, exec.files.join('\n'));
  assert.deepEqual(exec.files.filter((f) => !f.startsWith(join(dir, 'bundle'))), [], 'exec loads the bundle only');
  // The calls an agent's script makes most: none loads protocol's schemas (zod: ~100 files, tens of ms).
  for (const c of ['create', 'ls', 'rm', 'exec', 'snapshot', 'fork', 'rewind', 'pause', 'resume', 'cp', 'ps', 'kill', 'timeline']) {
    const r = await loads([c, '--help']);
    assert.deepEqual(r.files.filter((f) => f.includes('/node_modules/')), [], c);
  }
  // A command that validates with the schemas still finds zod outside the bundle.
  const policy = await loads(['policy', '--help']);
  assert.ok(policy.files.some((f) => f.includes('/node_modules/zod/')), policy.stderr);
});

test('source maps only where a stack is read: with FORKD_DEBUG a stack names the .ts lines', async () => {
  const env = { FORKD_URL: server!.url, FORKD_DEBUG: '1' };
  const debug = await bundled(['exec', 'sbx-gone', '--', 'x'], env);
  assert.equal(debug.code, 1);
  assert.match(debug.stderr, /^error: NOT_FOUND: no sandbox sbx-gone$/m);
  assert.match(debug.stderr, /packages\/protocol\/src\/errors\.ts:\d+/, debug.stderr);
  assert.match(debug.stderr, /packages\/sdk\/src\/[a-z-]+\.ts:\d+/, debug.stderr);
  assert.equal((await loads(['exec', 'sbx-gone', '--', 'x'], { FORKD_DEBUG: '1' })).sourceMaps, true);
  // Without it Node never reads a map (each costs a call milliseconds).
  const plain = await loads(['exec', 'sbx-gone', '--', 'x'], { FORKD_DEBUG: '' });
  assert.equal(plain.code, 1);
  assert.equal(plain.sourceMaps, false);
});
