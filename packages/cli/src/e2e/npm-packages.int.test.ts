import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { exec, REPO_ROOT } from '@forkd/server';
import { startFakeServer, sandboxInfo, sendJson, type FakeServer } from '@forkd/sdk/testing';

const PACKAGES = ['@forkd/protocol', '@forkd/sdk', '@forkd/mcp', '@forkd/cli'];
/** The caller's environment (its registry, proxy and CA settings) without FORKD_*: the installed CLI must find its server only where the test says. */
const npmEnv: NodeJS.ProcessEnv = { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('FORKD_'))), npm_config_update_notifier: 'false' };

/**
 * The packages' own dependencies (zod, the MCP SDK) come from the registry: without it there is nothing to
 * install. Probed by what the installs need (a package's metadata), not `npm ping`: a registry mirror may not
 * answer /-/ping, and a probe that hangs until its timeout rejects (it once failed the whole file so).
 */
const probe = await exec('npm', ['view', 'zod', 'version'], { allowFailure: true, timeoutMs: 30_000, env: npmEnv }).catch((err: Error) => ({ code: -1, stderr: err.message }));
const offline = probe.code !== 0 && `the npm registry is unreachable (npm view zod version: ${probe.stderr.trim().split('\n').pop() ?? probe.code})`;

describe('the published packages: packed, installed from their tarballs, run', { skip: offline }, () => {
  let dir = '';
  let server: FakeServer | undefined;
  let tarballs: string[] = [];

  after(async () => {
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('npm pack makes one tarball each, with the built code and no tests', async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-npm-'));
    const r = await exec('npm', ['pack', '--json', '--pack-destination', dir, ...PACKAGES.flatMap((p) => ['-w', p])], { cwd: REPO_ROOT, env: npmEnv, timeoutMs: 120_000 });
    const packed = JSON.parse(r.stdout) as { name: string; filename: string; files: { path: string }[] }[];
    assert.deepEqual(packed.map((p) => p.name), PACKAGES);
    for (const p of packed) {
      const paths = p.files.map((f) => f.path);
      assert.ok(paths.includes('package.json') && paths.includes('dist/index.js') && paths.includes('dist/index.d.ts'), `${p.name}: ${paths.join(' ')}`);
      assert.deepEqual(paths.filter((f) => /\.test\.|\.map$|\/e2e\/|tsbuildinfo|\/src\//.test(f)), [], p.name);
    }
    assert.ok(packed[3]!.files.some((f) => f.path === 'dist/main.js'));
    // The bin: the bundle (scripts/bundle-cli.mjs), CommonJS in a package that is not: its package.json says so.
    for (const f of ['dist/bundle/forkd.js', 'dist/bundle/cli.js', 'dist/bundle/package.json']) assert.ok(packed[3]!.files.some((x) => x.path === f), f);
    assert.ok(packed[3]!.files.some((f) => f.path.startsWith('dist/bundle/chunks/')));
    tarballs = packed.map((p) => join(dir, p.filename));
  });

  test('npm i -g of the tarballs gives a forkd client that talks to a server; the server commands say where to run them', async () => {
    assert.equal(tarballs.length, PACKAGES.length, 'packed first');
    const prefix = join(dir, 'global');
    await exec('npm', ['i', '-g', '--prefix', prefix, '--no-audit', '--no-fund', ...tarballs], { env: npmEnv, timeoutMs: 300_000 });
    const forkd = join(prefix, 'bin', 'forkd');
    const run = (args: string[], env: NodeJS.ProcessEnv = {}) => exec(forkd, args, { env: { ...npmEnv, ...env }, allowFailure: true, timeoutMs: 60_000 });
    const help = await run(['--help']);
    assert.equal(help.code, 0, help.stderr);
    assert.match(help.stdout, /^forkd: stateful sandboxes/);
    server = await startFakeServer((req, res) => {
      if (req.method === 'GET' && req.url.pathname === '/v1/sandboxes') sendJson(res, 200, { sandboxes: [sandboxInfo('sbx-aaaaaaaaaaaa')] });
      else sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'no' } });
    });
    const ls = await run(['ls', '--json'], { FORKD_URL: server.url, FORKD_API_KEY: 'k1' });
    assert.equal(ls.code, 0, ls.stderr);
    assert.match(ls.stdout, /sbx-aaaaaaaaaaaa/);
    assert.equal(server.requests.at(-1)!.headers.authorization, 'Bearer k1');
    // A command that validates with protocol's schemas: zod, outside the bundle, is installed with the CLI.
    await writeFile(join(dir, 'policy.json'), '{"exec": 7}');
    const policy = await run(['policy', 'set', 'sbx-aaaaaaaaaaaa', '--file', join(dir, 'policy.json')]);
    assert.match(policy.stderr, /^error: INVALID_ARGUMENT: .*policy\.json: not a policy: exec: /m, policy.stderr);
    const serve = await run(['serve']);
    assert.equal(serve.code, 1);
    assert.match(serve.stderr, /FAILED_PRECONDITION: forkd serve runs the server, which this installation of the CLI does not include/);
  });

  test('a project that installs the SDK and the MCP server imports and uses them', async () => {
    assert.equal(tarballs.length, PACKAGES.length, 'packed first');
    const app = join(dir, 'app');
    await exec('npm', ['i', '--prefix', app, '--no-audit', '--no-fund', ...tarballs.slice(0, 3)], { env: npmEnv, timeoutMs: 300_000 });
    await writeFile(
      join(app, 'check.mjs'),
      `import { ForkdClient } from '@forkd/sdk';
import { createForkdMcpServer } from '@forkd/mcp';
const client = new ForkdClient({ url: process.argv[2], apiKey: 'k2' });
const list = await client.sandboxes.list();
createForkdMcpServer(client, '0.0.0');
console.log(list.map((s) => s.id).join(','));
`,
    );
    const r = await exec(process.execPath, [join(app, 'check.mjs'), server!.url], { cwd: app, env: npmEnv, timeoutMs: 60_000 });
    assert.equal(r.stdout, 'sbx-aaaaaaaaaaaa\n');
    assert.equal(server!.requests.at(-1)!.headers.authorization, 'Bearer k2');
    // Not this checkout's copy: resolved inside the project.
    const where = await exec(process.execPath, ['--input-type=module', '-e', "console.log(import.meta.resolve('@forkd/sdk'))"], { cwd: app, env: npmEnv });
    assert.ok(fileURLToPath(where.stdout.trim()).startsWith(resolve(app, 'node_modules')), where.stdout);
  });
});
