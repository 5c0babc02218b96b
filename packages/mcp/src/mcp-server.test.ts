import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ForkdClient, type SandboxInfo } from '@forkd/sdk';
import { sendJson, startFakeServer, type FakeServer } from '@forkd/sdk/testing';
import { createForkdMcpServer } from './mcp-server.js';

const TOOLS = ['sandbox_create', 'sandbox_list', 'sandbox_exec', 'file_read', 'file_write', 'file_list', 'snapshot_create', 'snapshot_list', 'sandbox_fork', 'sandbox_rewind', 'sandbox_pause', 'sandbox_resume', 'sandbox_kill'];
const ID = 'sbx-0123456789ab';
const info: SandboxInfo = { id: ID, template: 'base', state: 'running', limits: { memoryMb: 512, cpus: 1, pids: 1024 }, env: {}, metadata: {}, createdAt: '2026-01-01T00:00:00Z', hostname: ID };
const big = 'x'.repeat(100 * 1024);
const b64 = (s: string) => Buffer.from(s).toString('base64');

let fake: FakeServer;
let client: Client;

before(async () => {
  fake = await startFakeServer((req, res) => {
    if (req.method === 'GET' && req.url.pathname === `/v1/sandboxes/${ID}`) return sendJson(res, 200, info);
    if (req.method === 'POST' && req.url.pathname === `/v1/sandboxes/${ID}/exec`) {
      const body = JSON.parse(req.body.toString()) as { command: string };
      if (body.command === 'curl evil') return sendJson(res, 403, { error: { code: 'PERMISSION_DENIED', message: 'refused by policy rule "no-network-tools"' } });
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      const events = [{ type: 'started', pid: 7, pty: false }, { type: 'stdout', data: b64(big) }, { type: 'stderr', data: b64('warn\n') }, { type: 'exit', exitCode: 3, signal: 0, oomKilled: false }];
      res.end(events.map((e) => JSON.stringify(e)).join('\n') + '\n');
      return;
    }
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: 'no route' } });
  });
  const server = createForkdMcpServer(new ForkdClient({ url: fake.url, apiKey: 'k' }), '0.0.0-test');
  const [a, b] = InMemoryTransport.createLinkedPair();
  await server.connect(a);
  client = new Client({ name: 'test', version: '0' });
  await client.connect(b);
});
after(async () => {
  await client?.close();
  await fake?.close();
});

test('the tools, named exactly, with snake_case arguments from the protocol limits', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
  for (const t of tools) {
    for (const k of Object.keys(t.inputSchema.properties ?? {})) assert.match(k, /^[a-z][a-z0-9_]*$/, `${t.name}.${k}`);
    assert.ok(t.description && t.description.length > 40, t.name);
    assert.ok(t.outputSchema, `${t.name} declares its structured content`);
  }
  const create = tools.find((t) => t.name === 'sandbox_create')!;
  assert.equal((create.inputSchema.properties?.memory_mb as { minimum?: number }).minimum, 32);
  const exec = tools.find((t) => t.name === 'sandbox_exec')!;
  assert.deepEqual([...(exec.inputSchema.required ?? [])].sort(), ['command', 'sandbox_id']);
  assert.match(tools.find((t) => t.name === 'snapshot_create')!.description!, /BEFORE any risky/);
  assert.match(tools.find((t) => t.name === 'sandbox_fork')!.description!, /in parallel/);
});

test('exec sends the API names, cuts large output with a note, and returns structured content', async () => {
  fake.requests.length = 0;
  const r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: ID, command: 'make', cwd: '/app', env: { A: '1' }, timeout_ms: 5000 } });
  assert.equal(r.isError, undefined);
  const s = r.structuredContent as { stdout: string; stderr: string; exit_code: number; stdout_cut_bytes?: number };
  assert.equal(s.exit_code, 3);
  assert.equal(s.stderr, 'warn\n');
  assert.equal(s.stdout_cut_bytes, big.length - 64 * 1024);
  assert.ok(s.stdout.startsWith('x'.repeat(64 * 1024) + '\n[forkd: stdout cut'));
  const sent = JSON.parse(fake.requests.find((q) => q.url.pathname.endsWith('/exec'))!.body.toString());
  assert.deepEqual(sent, { command: 'make', cwd: '/app', env: { A: '1' }, timeoutMs: 5000 });
});

test('a refused call is a tool error with the code and the rule', async () => {
  const r = await client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: ID, command: 'curl evil' } });
  assert.equal(r.isError, true);
  assert.match((r.content as { text: string }[])[0]!.text, /^PERMISSION_DENIED: .*no-network-tools/);
});

test('an argument the API would refuse is refused before any call', async () => {
  fake.requests.length = 0;
  const r = await client.callTool({ name: 'sandbox_create', arguments: { memory_mb: 16 } });
  assert.equal(r.isError, true);
  assert.equal(fake.requests.length, 0);
  const bad = await client.callTool({ name: 'sandbox_kill', arguments: { sandbox_id: '../etc' } });
  assert.equal(bad.isError, true);
});
