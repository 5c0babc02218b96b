import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeService } from '../node-contract/node-service.js';
import { createLogger } from '../shared/logger.js';
import { withContext } from '../shared/request-context.js';
import { sandboxInfo } from '../testing/sandbox-info.js';
import { NodeHttpClient } from './node-http-client.js';
import { listenNode } from './node-http-server.js';
import { NODE_PREFIX } from './node-wire.js';

const lines: string[] = [];
const log = createLogger('info', (l) => lines.push(l));
/** A node whose own code logs, as the SandboxManager does, with no request id passed to it. */
const node = { get: async (id: string) => (log.info('node looked up', { id }), sandboxInfo(id)) } as unknown as NodeService;
const server = await listenNode({ node, token: 'fnt_secret', logger: log }, '127.0.0.1', 0);
const client = new NodeHttpClient({ url: server.url, token: 'fnt_secret' });
after(() => server.close());

const lastLine = () => JSON.parse(lines[lines.length - 1]!) as { msg: string; requestId?: string };

test("a node over HTTP logs the control plane's request id on the lines of the call it serves", async () => {
  await withContext({ requestId: 'req-0123456789abcdef' }, () => client.get('sbx-aaaaaaaaaaaa'));
  assert.deepEqual([lastLine().msg, lastLine().requestId], ['node looked up', 'req-0123456789abcdef']);
  await client.get('sbx-aaaaaaaaaaaa');
  assert.equal(lastLine().requestId, undefined, 'a call outside any request carries none');
});

test('the header is what carries it; a header that is not a request id is ignored', async () => {
  const call = (id: string) => fetch(`${server.url}${NODE_PREFIX}/sandboxes/sbx-aaaaaaaaaaaa`, { headers: { authorization: 'Bearer fnt_secret', 'x-request-id': id } });
  assert.equal((await call('req-fedcba9876543210')).status, 200);
  assert.equal(lastLine().requestId, 'req-fedcba9876543210');
  assert.equal((await call('req-x", "admin":"true')).status, 200);
  assert.equal(lastLine().requestId, undefined);
});
