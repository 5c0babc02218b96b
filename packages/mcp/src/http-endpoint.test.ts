import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mcpHttpEndpoint } from './http-endpoint.js';

const caller = { apiKey: 'k', apiUrl: 'http://127.0.0.1:9' };
const post = (body: unknown) =>
  new Request('http://forkd/mcp', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(body) });

test('each POST is answered whole and its stream ends (no session is kept open)', async () => {
  const endpoint = mcpHttpEndpoint('0.0.0-test');
  const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '0' } } };
  const r1 = await endpoint.handle(post(init), init, caller);
  assert.equal(r1.status, 200);
  assert.equal(r1.headers.get('mcp-session-id'), null, 'stateless');
  assert.match(await r1.text(), /"serverInfo":\{"name":"forkd"/);
  const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' };
  const r2 = await endpoint.handle(post(list), list, caller);
  const text = await r2.text();
  assert.match(text, /"sandbox_exec"/);
});

test('GET and DELETE are 405: there is no standalone stream or session', async () => {
  const endpoint = mcpHttpEndpoint('0.0.0-test');
  for (const method of ['GET', 'DELETE']) {
    const r = await endpoint.handle(new Request('http://forkd/mcp', { method }), undefined, caller);
    assert.equal(r.status, 405, method);
  }
});
