import { testCipher } from '../../testing/test-cipher.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../shared/logger.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { ApiKeys } from '../auth/api-keys.js';
import { AuthThrottle } from '../auth/auth-throttle.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { fakeService } from './app-test-kit.js';
import type { McpCaller, McpEndpoint } from './mcp-endpoint.js';
import { listen } from './server.js';

/** A real listener (the endpoint needs the connection's local address) over a fake node, with an MCP endpoint that records its calls. */
async function mcpServer() {
  const store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store, new AuthThrottle({ burst: 10_000 })), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
  const calls: Array<{ body: unknown; caller: McpCaller }> = [];
  const mcp: McpEndpoint = {
    async handle(_req, body, caller) {
      calls.push({ body, caller });
      return Response.json({ jsonrpc: '2.0', id: 1, result: {} });
    },
  };
  const server = await listen({ svc: fakeService(), control, logger: silentLogger, mcp }, '127.0.0.1', 0);
  const key = (await control.keys.create({ format: 'forkd', admin: false }, undefined)).key;
  const post = (authorization: string | undefined, body = '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') =>
    fetch(`${server.url}/mcp`, { method: 'POST', headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body });
  return { server, control, calls, key, post };
}

test('/mcp hands the caller\'s own key, its body and the daemon\'s own address to the MCP endpoint', async () => {
  const { server, control, calls, key, post } = await mcpServer();
  try {
    const r = await post(`Bearer ${key}`);
    assert.equal(r.status, 200);
    assert.equal(calls.length, 1);
    assert.deepEqual(calls[0]!.body, { jsonrpc: '2.0', id: 1, method: 'tools/list' });
    assert.equal(calls[0]!.caller.apiKey, key);
    assert.equal(calls[0]!.caller.apiUrl, server.url.replace('localhost', '127.0.0.1'));
    const audit = await control.store.queryAudit({ limit: 10 });
    assert.ok(audit.some((a) => a.operation === 'POST /mcp' && a.code === 'OK'), 'audited as an API call');
  } finally {
    await server.close();
  }
});

test('a wrong or missing key is a 401 before any MCP handling; a bad body is INVALID_ARGUMENT', async () => {
  const { server, calls, key, post } = await mcpServer();
  try {
    for (const auth of ['Bearer fk_wrong', undefined]) {
      const r = await post(auth);
      assert.equal(r.status, 401);
      assert.equal(((await r.json()) as { error: { code: string } }).error.code, 'UNAUTHENTICATED');
    }
    assert.equal(calls.length, 0);
    const bad = await post(`Bearer ${key}`, '{nope');
    assert.equal(bad.status, 400);
    assert.equal(calls.length, 0);
  } finally {
    await server.close();
  }
});
