import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LoggingMessageNotificationSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { CLI, disposeNodeDir, isRoot, NODE_FLAGS, startDaemonProcess, stopDaemonProcess, testConfig, waitFor, type DaemonProcess } from '@forkd/server/testing';

const TOOLS = ['sandbox_create', 'sandbox_list', 'sandbox_exec', 'file_read', 'file_write', 'file_list', 'snapshot_create', 'snapshot_list', 'sandbox_fork', 'sandbox_rewind', 'sandbox_pause', 'sandbox_resume', 'sandbox_kill'];

/** A tool's structured content, the call failing the test when it is a tool error. */
async function call<T = Record<string, unknown>>(client: Client, name: string, args: Record<string, unknown>): Promise<T> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.ok(!r.isError, `${name} failed: ${JSON.stringify(r.content)}`);
  return r.structuredContent as T;
}

async function callError(client: Client, name: string, args: Record<string, unknown>): Promise<string> {
  const r = (await client.callTool({ name, arguments: args })) as CallToolResult;
  assert.equal(r.isError, true, `${name} should fail: ${JSON.stringify(r.structuredContent)}`);
  return (r.content[0] as { text: string }).text;
}

const exec = (client: Client, sandbox_id: string, command: string) => call<{ stdout: string; stderr: string; exit_code: number }>(client, 'sandbox_exec', { sandbox_id, command });

/**
 * The MCP contract, with the official MCP SDK as the client, against a real
 * daemon: over stdio (`forkd mcp`) and over streamable HTTP (`/mcp` on
 * `forkd serve`), the same workflows.
 */
describe('MCP against a real daemon', { skip: !isRoot && 'needs root' }, () => {
  let dir = '';
  let cfg: ReturnType<typeof testConfig>;
  let daemon: DaemonProcess | undefined;
  const clients: Client[] = [];

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'forkd-mcp-'));
    cfg = testConfig(dir);
    daemon = await startDaemonProcess(cfg.env);
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => undefined);
    await stopDaemonProcess(daemon);
    if (dir) await disposeNodeDir(undefined, dir, cfg.config);
  });

  const stdioClient = async (apiKey = daemon!.apiKey): Promise<Client> => {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [...NODE_FLAGS, CLI, 'mcp'],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', FORKD_URL: daemon!.url, FORKD_API_KEY: apiKey },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'forkd-test', version: '0' });
    clients.push(client);
    await client.connect(transport);
    return client;
  };
  const httpClient = async (apiKey = daemon!.apiKey): Promise<Client> => {
    const transport = new StreamableHTTPClientTransport(new URL(`${daemon!.url}/mcp`), { requestInit: { headers: { authorization: `Bearer ${apiKey}` } } });
    const client = new Client({ name: 'forkd-test', version: '0' });
    clients.push(client);
    await client.connect(transport);
    return client;
  };

  for (const [transport, connect] of [
    ['stdio', stdioClient],
    ['streamable HTTP', httpClient],
  ] as const) {
    describe(`over ${transport}`, () => {
      let client: Client;
      let id = '';

      before(async () => {
        client = await connect();
      });

      test('lists the tools with their schemas', async () => {
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name).sort(), [...TOOLS].sort());
        const execTool = tools.find((t) => t.name === 'sandbox_exec')!;
        assert.deepEqual([...(execTool.inputSchema.required ?? [])].sort(), ['command', 'sandbox_id']);
        assert.ok(execTool.inputSchema.properties?.timeout_ms && execTool.inputSchema.properties.cwd && execTool.inputSchema.properties.env);
        assert.ok(execTool.outputSchema?.properties?.exit_code);
        const { resourceTemplates } = await client.listResourceTemplates();
        assert.deepEqual(resourceTemplates.map((r) => r.uriTemplate).sort(), ['forkd://sandboxes/{sandbox_id}/timeline', 'forkd://sandboxes/{sandbox_id}/tree']);
      });

      test('creates a sandbox and runs a command in it', async () => {
        ({ id } = await call<{ id: string }>(client, 'sandbox_create', { memory_mb: 256 }));
        assert.match(id, /^sbx-[a-z0-9]{12}$/);
        const r = await call<{ stdout: string; stderr: string; exit_code: number }>(client, 'sandbox_exec', { sandbox_id: id, command: 'echo "$GREETING from $(pwd)"; echo oops >&2; exit 3', cwd: '/tmp', env: { GREETING: 'hello' } });
        assert.deepEqual(r, { stdout: 'hello from /tmp\n', stderr: 'oops\n', exit_code: 3 });
        const listed = await call<{ sandboxes: { id: string }[] }>(client, 'sandbox_list', {});
        assert.ok(listed.sandboxes.some((s) => s.id === id));
      });

      test('large output is cut with a note', async () => {
        const r = await call<{ stdout: string; stdout_cut_bytes?: number; exit_code: number }>(client, 'sandbox_exec', { sandbox_id: id, command: 'head -c 200000 /dev/zero | tr "\\0" y' });
        assert.equal(r.exit_code, 0);
        assert.equal(r.stdout_cut_bytes, 200000 - 64 * 1024);
        assert.match(r.stdout, /^y{65536}\n\[forkd: stdout cut: 134464 more bytes/);
      });

      test('try something risky: snapshot, rm -rf the project, rewind, the project is back', async () => {
        await call(client, 'file_write', { sandbox_id: id, path: '/proj/src/main.py', content: 'print("the work")\n' });
        await exec(client, id, 'echo notes > /proj/NOTES');
        const { id: snap } = await call<{ id: string }>(client, 'snapshot_create', { sandbox_id: id, name: 'before-cleanup' });
        assert.match(snap, /^snap-/);
        assert.equal((await exec(client, id, 'rm -rf /proj && ls /proj')).exit_code, 2);
        assert.match(await callError(client, 'file_read', { sandbox_id: id, path: '/proj/src/main.py' }), /^NOT_FOUND: /);
        await call(client, 'sandbox_rewind', { sandbox_id: id, snapshot_id: snap });
        assert.equal((await call<{ content: string }>(client, 'file_read', { sandbox_id: id, path: '/proj/src/main.py' })).content, 'print("the work")\n');
        assert.equal((await exec(client, id, 'cat /proj/NOTES')).stdout, 'notes\n');
        const listing = await call<{ entries: { path: string }[] }>(client, 'file_list', { sandbox_id: id, path: '/proj' });
        assert.deepEqual(listing.entries.map((e) => e.path).sort(), ['/proj/NOTES', '/proj/src']);
        const { snapshots } = await call<{ snapshots: { id: string; name?: string; reason: string }[] }>(client, 'snapshot_list', { sandbox_id: id });
        assert.ok(snapshots.some((s) => s.id === snap && s.name === 'before-cleanup'));
        assert.ok(snapshots.some((s) => s.reason === 'rewind'), 'the state it left was kept');
        const timeline = await client.readResource({ uri: `forkd://sandboxes/${id}/timeline` });
        const body = JSON.parse((timeline.contents[0] as { text: string }).text) as { snapshots: { id: string }[] };
        assert.ok(body.snapshots.some((s) => s.id === snap));
      });

      test('forks into two sandboxes that go different ways', async () => {
        const { ids } = await call<{ ids: string[] }>(client, 'sandbox_fork', { sandbox_id: id, count: 2 });
        assert.equal(ids.length, 2);
        const [a, b] = ids as [string, string];
        await exec(client, a, 'echo plan-a > /proj/PLAN');
        await exec(client, b, 'rm -rf /proj/src && echo plan-b > /proj/PLAN');
        assert.equal((await exec(client, a, 'cat /proj/PLAN; cat /proj/src/main.py')).stdout, 'plan-a\nprint("the work")\n');
        assert.equal((await exec(client, b, 'cat /proj/PLAN; ls /proj')).stdout, 'plan-b\nNOTES\nPLAN\n');
        assert.equal((await exec(client, id, 'ls /proj')).stdout, 'NOTES\nsrc\n', 'the original is untouched');
        const tree = await client.readResource({ uri: `forkd://sandboxes/${id}/tree` });
        const t = JSON.parse((tree.contents[0] as { text: string }).text) as { sandbox: { id: string }; children: { sandbox: { id: string } }[] };
        assert.equal(t.sandbox.id, id);
        assert.deepEqual(t.children.map((c) => c.sandbox.id).sort(), [...ids].sort());
        for (const f of ids) await call(client, 'sandbox_kill', { sandbox_id: f });
      });

      test('tool calls are API calls: audited under the caller\'s key and the sandbox', async () => {
        const marker = `audit-${transport.replace(/\W/g, '')}`;
        await exec(client, id, `echo ${marker}`);
        const r = await fetch(`${daemon!.url}/v1/audit?sandbox=${id}&limit=1000`, { headers: { authorization: `Bearer ${daemon!.apiKey}` } });
        const { records } = (await r.json()) as { records: { operation: string; target?: string; keyId?: string; code: string }[] };
        const rec = records.find((x) => x.operation === 'POST /v1/sandboxes/:id/exec' && x.target?.includes(marker));
        assert.ok(rec, `exec audited: ${JSON.stringify(records.slice(-5))}`);
        assert.equal(rec.code, 'OK');
        assert.ok(rec.keyId);
        if (transport === 'streamable HTTP') {
          const all = (await (await fetch(`${daemon!.url}/v1/audit?operation=${encodeURIComponent('POST /mcp')}&limit=5`, { headers: { authorization: `Bearer ${daemon!.apiKey}` } })).json()) as { records: { keyId?: string }[] };
          assert.ok(all.records.length > 0 && all.records.every((x) => x.keyId === rec.keyId), 'the /mcp requests themselves too');
        }
      });

      test('a policy-denied command answers a tool error naming the rule; an approval-gated one waits and says so', async (t: TestContext) => {
        const admin = { authorization: `Bearer ${daemon!.apiKey}`, 'content-type': 'application/json' };
        const put = await fetch(`${daemon!.url}/v1/sandboxes/${id}/policy`, { method: 'PUT', headers: admin, body: JSON.stringify({ exec: { deny: ['^curl'], requireApproval: ['^echo needs-approval'] } }) });
        if (put.status === 404) {
          t.skip('no policy API in this build (PUT /v1/sandboxes/{id}/policy answers 404): enable once policy lands');
          return;
        }
        assert.ok(put.ok, await put.text());
        const text = await callError(client, 'sandbox_exec', { sandbox_id: id, command: 'curl http://example.com' });
        assert.match(text, /^PERMISSION_DENIED: .*rule .*curl/);

        const told: string[] = [];
        client.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void told.push(String(n.params.data)));
        const progress: string[] = [];
        const pending = client.callTool({ name: 'sandbox_exec', arguments: { sandbox_id: id, command: 'echo needs-approval' } }, undefined, { onprogress: (p) => void progress.push(p.message ?? '') });
        const approval = await waitFor(async () => {
          const r = (await (await fetch(`${daemon!.url}/v1/approvals`, { headers: admin })).json()) as { approvals: { id: string; sandbox?: string }[] };
          return r.approvals.find((a) => a.sandbox === undefined || a.sandbox === id);
        }, 20_000, 'an approval to decide');
        await waitFor(() => told.some((m) => m.startsWith('waiting for approval')), 10_000, 'the client told that the call waits');
        assert.ok(progress.some((m) => m.startsWith('waiting for approval')), 'and as progress');
        assert.ok((await fetch(`${daemon!.url}/v1/approvals/${approval.id}/approve`, { method: 'POST', headers: admin })).ok);
        const r = (await pending) as CallToolResult;
        assert.ok(!r.isError, JSON.stringify(r.content));
        assert.equal((r.structuredContent as { stdout: string }).stdout, 'needs-approval\n');
        await fetch(`${daemon!.url}/v1/sandboxes/${id}/policy`, { method: 'PUT', headers: admin, body: '{}' });
      });

      test('a wrong key is refused', async () => {
        if (transport === 'stdio') {
          // The stdio server holds no key check of its own: the API refuses its first call.
          const bad = await stdioClient('fk_wrong');
          assert.match(await callError(bad, 'sandbox_list', {}), /^UNAUTHENTICATED: /);
        } else {
          await assert.rejects(httpClient('fk_wrong'), /401|UNAUTHENTICATED/);
          const r = await fetch(`${daemon!.url}/mcp`, {
            method: 'POST',
            headers: { authorization: 'Bearer fk_wrong', 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
          });
          assert.equal(r.status, 401);
          assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'UNAUTHENTICATED');
          assert.equal((await fetch(`${daemon!.url}/mcp`, { method: 'POST', body: '{}' })).status, 401, 'no key at all');
        }
      });

      after(async () => {
        if (id) await call(client, 'sandbox_kill', { sandbox_id: id }).catch(() => undefined);
      });
    });
  }
});
