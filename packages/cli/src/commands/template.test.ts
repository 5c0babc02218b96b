import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { TemplateInfo } from '@forkd/sdk';
import { runCli } from '../cli.js';
import { UsageError } from '../usage-error.js';
import { parseTemplateArgs, templatesTable } from './template.js';

test('template build NAME [--from T] [--run CMD]... [--start CMD] [--json]', () => {
  assert.deepEqual(parseTemplateArgs(['build', 'py']), { sub: 'build', request: { name: 'py' }, json: false });
  assert.deepEqual(
    parseTemplateArgs(['build', '--run', 'apt-get install -y python3', 'py', '--from', 'tools', '--run=pip install flask', '--start', 'python3 -m http.server', '--json']),
    {
      sub: 'build',
      request: { name: 'py', from: 'tools', setup: ['apt-get install -y python3', 'pip install flask'], start: 'python3 -m http.server' },
      json: true,
    },
  );
  assert.throws(() => parseTemplateArgs(['build']), /missing NAME/);
  assert.deepEqual(parseTemplateArgs(['build', 'py', '--from-image', 'python:3.12-slim']), { sub: 'build', request: { name: 'py', fromImage: 'python:3.12-slim' }, json: false });
  assert.deepEqual(parseTemplateArgs(['build', 'p', '--from-image', 'r.io/t/i:1', '--registry-user', 'me'], { FORKD_REGISTRY_PASSWORD: 'tok' }).sub === 'build' && parseTemplateArgs(['build', 'p', '--from-image', 'r.io/t/i:1', '--registry-user', 'me'], { FORKD_REGISTRY_PASSWORD: 'tok' }), {
    sub: 'build',
    request: { name: 'p', fromImage: 'r.io/t/i:1', registryAuth: { username: 'me', password: 'tok' } },
    json: false,
  });
  assert.throws(() => parseTemplateArgs(['build', 'p', '--from-image', 'Bad Ref']), /invalid --from-image/);
  assert.throws(() => parseTemplateArgs(['build', 'p', '--from-image', 'x', '--from', 'base']), /exclude/);
  assert.throws(() => parseTemplateArgs(['build', 'p', '--from-image', 'x', '--registry-user', 'me'], {}), /FORKD_REGISTRY_PASSWORD/);
  assert.throws(() => parseTemplateArgs(['build', 'a', 'b']), /unexpected argument "b"/);
  for (const bad of ['Py', '1py', 'py_3', 'a'.repeat(64), '']) assert.throws(() => parseTemplateArgs(['build', bad]), /invalid template name/, bad);
  assert.throws(() => parseTemplateArgs(['build', 'py', '--from', 'Base']), /invalid --from/);
  assert.throws(() => parseTemplateArgs(['build', 'py', '--from', 'py']), /cannot be built from itself/);
  assert.throws(() => parseTemplateArgs(['build', 'base']), /cannot be built from itself/);
  assert.throws(() => parseTemplateArgs(['build', 'py', '--run', ' ']), /--run needs a command/);
  assert.throws(() => parseTemplateArgs(['build', 'py', '--start', '']), /--start needs a command/);
  assert.throws(() => parseTemplateArgs(['build', 'py', '--run']), UsageError);
  assert.throws(() => parseTemplateArgs(['build', 'py', '--setup', 'x']), /unknown option '--setup'/);
});

test('template build --apt PKG... and --recipe code-interpreter', () => {
  assert.deepEqual(parseTemplateArgs(['build', 'ci', '--apt', 'python3-pandas', '--apt', 'libstdc++6', '--run', 'true']), { sub: 'build', request: { name: 'ci', aptPackages: ['python3-pandas', 'libstdc++6'], setup: ['true'] }, json: false });
  for (const bad of ['-o', 'Python3', 'a', 'x;rm', '../x']) assert.throws(() => parseTemplateArgs(['build', 'ci', `--apt=${bad}`]), /invalid --apt/, bad);
  assert.throws(() => parseTemplateArgs(['build', 'ci', '--apt', 'curl', '--from-image', 'alpine']), /not with --from-image/);
  assert.deepEqual(parseTemplateArgs(['build', 'web', '--start', 'python3 -m http.server', '--ready', 'curl -sf localhost:8000']), { sub: 'build', request: { name: 'web', start: 'python3 -m http.server', ready: 'curl -sf localhost:8000' }, json: false });
  assert.throws(() => parseTemplateArgs(['build', 'web', '--ready', 'true']), /--ready goes with --start/);
  assert.deepEqual(parseTemplateArgs(['build', 'tools', '--shared']), { sub: 'build', request: { name: 'tools', shared: true }, json: false });
  assert.deepEqual(parseTemplateArgs(['build', 'code-interpreter', '--recipe', 'code-interpreter', '--json']), { sub: 'build', recipe: 'code-interpreter', name: 'code-interpreter', json: true });
  assert.throws(() => parseTemplateArgs(['build', 'ci', '--recipe', 'jupyter']), /unknown --recipe "jupyter"/);
  assert.throws(() => parseTemplateArgs(['build', 'ci', '--recipe', 'code-interpreter', '--run', 'x', '--from', 'base']), /--recipe excludes --from, --run/);
});

test('template ls [--json], template rm NAME...', () => {
  assert.deepEqual(parseTemplateArgs(['ls']), { sub: 'ls', json: false });
  assert.deepEqual(parseTemplateArgs(['ls', '--json']), { sub: 'ls', json: true });
  assert.throws(() => parseTemplateArgs(['ls', 'py']), /unexpected argument/);
  assert.throws(() => parseTemplateArgs(['ls', '--run', 'x']), /unknown option/);
  assert.deepEqual(parseTemplateArgs(['rm', 'py', 'node']), { sub: 'rm', names: ['py', 'node'] });
  assert.throws(() => parseTemplateArgs(['rm']), /missing NAME/);
  assert.throws(() => parseTemplateArgs(['rm', '--json', 'py']), /unknown option/);
});

test('template with no or an unknown subcommand is a usage error', () => {
  assert.throws(() => parseTemplateArgs([]), (e: unknown) => e instanceof UsageError && /missing subcommand: ls, build, rm/.test(e.message));
  assert.throws(() => parseTemplateArgs(['--json']), /missing subcommand/);
  assert.throws(() => parseTemplateArgs(['create', 'py']), /unknown subcommand "create": expected ls, build, rm/);
});

test('templates table: NAME, WARM, FROM, CREATED', () => {
  const now = Date.parse('2025-01-01T02:00:00.000Z');
  const out = templatesTable(
    [
      { name: 'base', createdAt: '2025-01-01T00:00:00.000Z', warm: false },
      { name: 'py-web', createdAt: '2025-01-01T01:55:00.000Z', warm: true, from: 'base' },
      { name: 'legacy', createdAt: '2025-01-01T00:00:00.000Z' },
    ],
    now,
  );
  const lines = out.trimEnd().split('\n');
  assert.match(lines[0]!, /^NAME +WARM +FROM +CREATED$/);
  assert.match(lines[1]!, /^base +no +- +2h ago$/);
  assert.match(lines[2]!, /^py-web +yes +base +5m ago$/);
  assert.match(lines[3]!, /^legacy +no +- +2h ago$/);
});

/** Runs the CLI against a scripted server, with stdout/stderr captured (ANSI stripped). */
async function runAgainst(handler: (req: IncomingMessage, body: string, res: ServerResponse) => void, argv: string[]) {
  const bodies: string[] = [];
  const server = createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += String(c);
    bodies.push(`${req.method} ${req.url} ${body}`);
    handler(req, body, res);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const saved = { url: process.env.FORKD_URL, o: process.stdout.write, e: process.stderr.write };
  const out = { stdout: '', stderr: '' };
  process.env.FORKD_URL = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // Only strings are ours: the test runner reports on stdout too, in binary, and must get through.
  const capture = (key: 'stdout' | 'stderr', original: typeof process.stdout.write) =>
    ((chunk: unknown, ...rest: unknown[]) =>
      typeof chunk === 'string' ? ((out[key] += chunk), true) : (original as (...a: unknown[]) => boolean).call(process[key], chunk, ...rest)) as typeof process.stdout.write;
  process.stdout.write = capture('stdout', saved.o);
  process.stderr.write = capture('stderr', saved.e);
  try {
    const status = await runCli(argv);
    const plain = (s: string) => s.replace(/\x1b\[[0-9;]*m/g, '');
    return { status, stdout: plain(out.stdout), stderr: plain(out.stderr), requests: bodies };
  } finally {
    process.stdout.write = saved.o;
    process.stderr.write = saved.e;
    if (saved.url === undefined) delete process.env.FORKD_URL;
    else process.env.FORKD_URL = saved.url;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

const PY: TemplateInfo = { name: 'py', createdAt: '2025-01-01T00:00:00.000Z', warm: true, from: 'base' };

function ndjson(res: ServerResponse, events: object[]) {
  res.writeHead(200, { 'content-type': 'application/x-ndjson' });
  res.end(events.map((e) => JSON.stringify(e) + '\n').join(''));
}

test('template build: progress on stderr, the name on stdout, setup commands in order', async () => {
  const r = await runAgainst(
    (_req, _body, res) => ndjson(res, [{ type: 'progress', line: '$ make' }, { type: 'progress', line: 'cc a.c\ncc b.c' }, { type: 'progress', line: '' }, { type: 'done', template: PY }]),
    ['template', 'build', 'py', '--run', 'make', '--run', 'make install', '--start', 'serve'],
  );
  assert.equal(r.status, 0);
  assert.equal(r.stdout, 'py\n');
  assert.equal(r.stderr, '$ make\ncc a.c\ncc b.c\n');
  assert.deepEqual(r.requests, [`POST /v1/templates ${JSON.stringify({ name: 'py', setup: ['make', 'make install'], start: 'serve' })}`]);
});

test('template build --json prints the TemplateInfo; a failed build exits 1 with the error', async () => {
  const ok = await runAgainst((_req, _body, res) => ndjson(res, [{ type: 'done', template: PY }]), ['template', 'build', 'py', '--json']);
  assert.equal(ok.status, 0);
  assert.deepEqual(JSON.parse(ok.stdout), PY);

  const failed = await runAgainst(
    (_req, _body, res) =>
      ndjson(res, [
        { type: 'progress', line: '$ false' },
        { type: 'error', error: { code: 'FAILED_PRECONDITION', message: 'setup command failed (exit 1): false', details: { outputTail: '' } } },
      ]),
    ['template', 'build', 'py', '--run', 'false'],
  );
  assert.equal(failed.status, 1);
  assert.equal(failed.stdout, '');
  assert.equal(failed.stderr, '$ false\nerror: FAILED_PRECONDITION: setup command failed (exit 1): false\n');
});

test('template ls and the templates alias print the same table; template rm carries on past failures', async () => {
  const list = (_req: IncomingMessage, _body: string, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ templates: [PY] }));
  };
  const ls = await runAgainst(list, ['template', 'ls']);
  assert.equal(ls.status, 0);
  assert.match(ls.stdout, /^NAME +WARM +FROM +CREATED\npy +yes +base +/);
  assert.equal((await runAgainst(list, ['templates'])).stdout, ls.stdout);
  assert.deepEqual(JSON.parse((await runAgainst(list, ['templates', '--json'])).stdout), [PY]);

  const rm = await runAgainst((req, _body, res) => {
    if (req.url === '/v1/templates/py') return void res.writeHead(204).end();
    res.writeHead(412, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'FAILED_PRECONDITION', message: 'the base template cannot be deleted' } }));
  }, ['template', 'rm', 'base', 'py']);
  assert.equal(rm.status, 1);
  assert.equal(rm.stdout, 'py\n');
  assert.equal(rm.stderr, 'error: FAILED_PRECONDITION: the base template cannot be deleted\n');
  assert.deepEqual(rm.requests, ['DELETE /v1/templates/base ', 'DELETE /v1/templates/py ']);
});

test('forkd template without a subcommand exits 2; help lists template and templates', async () => {
  const none = await runAgainst(() => assert.fail('no request expected'), ['template']);
  assert.equal(none.status, 2);
  assert.match(none.stderr, /^error: INVALID_ARGUMENT: missing subcommand: ls, build, rm, network\nRun 'forkd template --help'/);
  const bogus = await runAgainst(() => assert.fail('no request expected'), ['template', 'bogus']);
  assert.equal(bogus.status, 2);
  const help = await runAgainst(() => {}, ['--help']);
  assert.match(help.stdout, /\n  template +list, build and delete templates\n/);
  assert.match(help.stdout, /\n  templates +list templates/);
  assert.match((await runAgainst(() => {}, ['template', 'build', '--help'])).stdout, /--run CMD/);
});

test('template build --dockerfile: the Dockerfile and its context go in the request; Step lines on stderr', async () => {
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'forkd-cli-df-'));
  try {
    await writeFile(join(dir, 'Dockerfile'), 'FROM template:base\nCOPY a.txt /a.txt\n');
    await writeFile(join(dir, 'a.txt'), 'A');
    const step = { index: 1, total: 2, instruction: 'FROM template:base' };
    const r = await runAgainst(
      (_req, _body, res) => ndjson(res, [{ type: 'progress', line: 'Step 1/2 : FROM template:base', step: { ...step, status: 'start' } }, { type: 'progress', line: ' ---> CACHED', step: { ...step, status: 'cached' } }, { type: 'done', template: PY }]),
      ['template', 'build', 'py', '--dockerfile', join(dir, 'Dockerfile'), '--build-arg', 'V=1'],
    );
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stderr, 'Step 1/2 : FROM template:base\n ---> CACHED\n');
    const body = JSON.parse(r.requests[0]!.replace(/^POST \/v1\/templates /, '')) as { dockerfile: string; buildArgs: unknown; context: { entries: { path: string }[] } };
    assert.equal(body.dockerfile, 'FROM template:base\nCOPY a.txt /a.txt\n');
    assert.deepEqual(body.buildArgs, { V: '1' });
    assert.deepEqual(body.context.entries.map((e) => e.path).sort(), ['Dockerfile', 'a.txt']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  assert.throws(() => parseTemplateArgs(['build', 'p', '--dockerfile', 'D', '--run', 'x']), /exclude/);
  assert.throws(() => parseTemplateArgs(['build', 'p', '--context', '.']), /go with --dockerfile/);
  assert.throws(() => parseTemplateArgs(['build', 'p', '--dockerfile', 'D', '--build-arg', '1=x']), /invalid --build-arg/);
  assert.deepEqual(parseTemplateArgs(['build', 'p', '--dockerfile', 'x/Dockerfile']), { sub: 'build', request: { name: 'p' }, json: false, dockerfile: { path: 'x/Dockerfile', context: 'x' } });
});
