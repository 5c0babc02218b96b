import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { sandboxInfo, sendJson, startFakeServer, type FakeServer } from '@forkd/sdk/testing';
import { UsageError } from '../usage-error.js';
import { parseGrantArgs } from './grant.js';
import { parseSecretArgs, secretValue } from './secret.js';
import { parseExecArgs } from './exec.js';

const MAIN = fileURLToPath(new URL('../main.js', import.meta.url));
const SB = 'sbx-aaaaaaaaaaaa';
const GRANT = { id: 'grt-0123456789abcdef', sandboxId: SB, secret: 'TOKEN', hosts: ['api.example.com'], header: 'Authorization: Bearer {secret}', createdAt: new Date().toISOString() };

/** Runs the real CLI binary against `server`, with `input` on stdin. */
function cli(server: FakeServer, argv: string[], input = ''): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const p = execFile(process.execPath, [MAIN, ...argv], { env: { ...process.env, FORKD_URL: server.url, FORKD_API_KEY: 'forkd_test' } }, (err, stdout, stderr) => {
      resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
    p.stdin!.end(input);
  });
}

test('secret and grant arguments: the contract, and bad input refused before any call', () => {
  assert.deepEqual(parseSecretArgs(['set', 'TOKEN']), { sub: 'set', name: 'TOKEN' });
  assert.deepEqual(parseSecretArgs(['ls', '--json']), { sub: 'ls', json: true });
  assert.deepEqual(parseSecretArgs(['rm', 'A', 'B']), { sub: 'rm', names: ['A', 'B'] });
  assert.equal(secretValue(Buffer.from('v4lue\n')), 'v4lue');
  assert.equal(secretValue(Buffer.from('v4lue')), 'v4lue');
  assert.deepEqual(parseGrantArgs(['create', SB, '--secret', 'TOKEN', '--host', 'API.example.com:443', '--host', '*.example.org', '--header', 'Authorization: Bearer {secret}', '--ttl', '60', '--method', 'post', '--path', '/v1', '--json']), {
    sub: 'create',
    id: SB,
    request: { secret: 'TOKEN', hosts: ['api.example.com:443', '*.example.org'], header: 'Authorization: Bearer {secret}', methods: ['POST'], paths: ['/v1'], ttlSeconds: 60 },
    json: true,
  });
  assert.deepEqual(parseGrantArgs(['ls', SB]), { sub: 'ls', id: SB, json: false });
  assert.deepEqual(parseGrantArgs(['rm', SB, GRANT.id]), { sub: 'rm', id: SB, grants: [GRANT.id] });
  for (const bad of [[], ['set'], ['set', 'a b'], ['rm'], ['show', 'A']]) assert.throws(() => parseSecretArgs(bad), UsageError, bad.join(' '));
  const ok = ['--secret', 'TOKEN', '--host', 'a.com', '--header', 'A: {secret}'];
  for (const bad of [['create'], ['create', SB], ['create', SB, ...ok, '--ttl', '0'], ['create', SB, '--secret', 'TOKEN', '--host', 'a.com', '--header', 'A: no-placeholder'], ['create', SB, '--secret', 'TOKEN', '--host', 'http://a.com', '--header', 'A: {secret}'], ['rm', SB], ['ls']]) {
    assert.throws(() => parseGrantArgs(bad), UsageError, bad.join(' '));
  }
});

test('the CLI against a server: secret set reads stdin, ls shows no value, grant create --json prints {"id"}, ls and rm', async () => {
  const server = await startFakeServer((req, res) => {
    const p = `${req.method} ${req.url.pathname}`;
    if (p === 'PUT /v1/secrets/TOKEN') return sendJson(res, 200, { name: 'TOKEN', createdAt: GRANT.createdAt, updatedAt: GRANT.createdAt });
    if (p === 'GET /v1/secrets') return sendJson(res, 200, { secrets: [{ name: 'TOKEN', createdAt: GRANT.createdAt, updatedAt: GRANT.createdAt }] });
    if (p === 'DELETE /v1/secrets/TOKEN') return void res.writeHead(204).end();
    if (p === `GET /v1/sandboxes/${SB}`) return sendJson(res, 200, sandboxInfo(SB));
    if (p === `POST /v1/sandboxes/${SB}/grants`) return sendJson(res, 201, GRANT);
    if (p === `GET /v1/sandboxes/${SB}/grants`) return sendJson(res, 200, { grants: [GRANT] });
    if (p === `DELETE /v1/sandboxes/${SB}/grants/${GRANT.id}`) return void res.writeHead(204).end();
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: p } });
  });
  try {
    const set = await cli(server, ['secret', 'set', 'TOKEN'], 'sk-v4lue\n');
    assert.equal(set.status, 0, set.stderr);
    assert.equal(set.stdout, 'TOKEN\n');
    const put = server.requests.find((r) => r.method === 'PUT')!;
    assert.deepEqual(JSON.parse(put.body.toString()), { value: 'sk-v4lue' });
    const ls = await cli(server, ['secret', 'ls']);
    assert.match(ls.stdout, /^NAME\s+CREATED\s+UPDATED\nTOKEN\s/);
    assert.equal((await cli(server, ['secret', 'rm', 'TOKEN'])).status, 0);
    const created = await cli(server, ['grant', 'create', SB, '--secret', 'TOKEN', '--host', 'api.example.com', '--header', 'Authorization: Bearer {secret}', '--ttl', '30', '--json']);
    assert.equal(created.status, 0, created.stderr);
    assert.equal(JSON.parse(created.stdout).id, GRANT.id);
    const post = server.requests.find((r) => r.method === 'POST')!;
    assert.deepEqual(JSON.parse(post.body.toString()), { secret: 'TOKEN', hosts: ['api.example.com'], header: 'Authorization: Bearer {secret}', ttlSeconds: 30 });
    assert.equal((await cli(server, ['grant', 'create', SB, '--secret', 'TOKEN', '--host', 'api.example.com', '--header', 'Authorization: Bearer {secret}'])).stdout, `${GRANT.id}\n`);
    assert.match((await cli(server, ['grant', 'ls', SB])).stdout, new RegExp(`${GRANT.id}\\s+TOKEN\\s+api.example.com`));
    const rm = await cli(server, ['grant', 'rm', SB, GRANT.id]);
    assert.equal(rm.status, 0, rm.stderr);
    assert.ok(server.requests.some((r) => r.method === 'DELETE' && r.url.pathname === `/v1/sandboxes/${SB}/grants/${GRANT.id}`));
    assert.equal((await cli(server, ['grant', 'create', SB, '--secret', 'TOKEN'])).status, 2);
  } finally {
    await server.close();
  }
});

test('exec --grant: SECRET=HOSTS=HEADER per-call grants, refused with --background', () => {
  const a = parseExecArgs(['sbx-1', '--grant', 'TOKEN=API.example.com,*.example.org:443=Authorization: Bearer {secret}==', '--', 'curl', 'x']);
  assert.deepEqual(a.grants, [{ secret: 'TOKEN', hosts: ['api.example.com', '*.example.org:443'], header: 'Authorization: Bearer {secret}==' }]);
  // Only 80 and 443 reach the egress proxy: a grant for another port would never inject.
  assert.throws(() => parseExecArgs(['sbx-1', '--grant', 'TOKEN=a.com:8000=A: {secret}', '--', 'ls']), /ports 80 and 443 only/);
  assert.deepEqual(parseExecArgs(['sbx-1', '--', 'ls']).grants, []);
  for (const bad of ['TOKEN', 'TOKEN=a.com', '=a.com=A: {secret}', 'TOKEN=a b=A: {secret}', 'TOKEN=a.com=A: none']) assert.throws(() => parseExecArgs(['sbx-1', '--grant', bad, '--', 'ls']), UsageError, bad);
  assert.throws(() => parseExecArgs(['sbx-1', '-b', '--grant', 'T=a.com=A: {secret}', '--', 'ls']), UsageError);
});
