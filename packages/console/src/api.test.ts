import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiClient, withQuery, type FetchLike } from './api.js';
import { ForkdError } from './vendor/errors.js';
import { sessionKeyStore } from './session.js';

function fakeFetch(answer: (url: string, init: RequestInit) => Response | Promise<Response>): FetchLike & { calls: Array<[string, RequestInit]> } {
  const calls: Array<[string, RequestInit]> = [];
  return Object.assign(
    async (url: string, init: RequestInit) => {
      calls.push([url, init]);
      return answer(url, init);
    },
    { calls },
  );
}

const json = (status: number, body: unknown) => new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

test('every request carries the key as the SDK sends it (Authorization: Bearer), JSON bodies typed', async () => {
  const f = fakeFetch(() => json(200, { sandboxes: [] }));
  const api = new ApiClient('fk_key', f);
  await api.get('/v1/sandboxes', { state: 'running', metadata: undefined });
  await api.post('/v1/sandboxes', { template: 'base' });
  const [[url, init], [, post]] = f.calls as [[string, RequestInit], [string, RequestInit]];
  assert.equal(url, '/v1/sandboxes?state=running');
  assert.equal((init.headers as Record<string, string>).authorization, 'Bearer fk_key');
  assert.equal((post.headers as Record<string, string>)['content-type'], 'application/json');
  assert.equal(post.body, '{"template":"base"}');
});

test("an error answer becomes forkd's ForkdError with the server's code, message and request id", async () => {
  const api = new ApiClient('k', fakeFetch(() => json(404, { error: { code: 'NOT_FOUND', message: 'sandbox sbx-x not found', requestId: 'req-1' } })));
  const err = await api.get('/v1/sandboxes/sbx-x').catch((e: unknown) => e);
  assert.ok(err instanceof ForkdError);
  assert.equal(err.code, 'NOT_FOUND');
  assert.equal(err.message, 'sandbox sbx-x not found');
  assert.equal(err.requestId, 'req-1');
});

test('a body that is not an error body: 401 is UNAUTHENTICATED, others by status; a network failure is UNAVAILABLE', async () => {
  const bare401 = new ApiClient('k', fakeFetch(() => new Response('no', { status: 401 })));
  assert.equal(((await bare401.get('/v1/x').catch((e: unknown) => e)) as ForkdError).code, 'UNAUTHENTICATED');
  const proxy502 = new ApiClient('k', fakeFetch(() => new Response('<html>bad gateway</html>', { status: 502 })));
  assert.equal(((await proxy502.get('/v1/x').catch((e: unknown) => e)) as ForkdError).code, 'INTERNAL');
  const down = new ApiClient('k', fakeFetch(() => Promise.reject(new TypeError('fetch failed'))));
  const err = (await down.get('/v1/x').catch((e: unknown) => e)) as ForkdError;
  assert.equal(err.code, 'UNAVAILABLE');
  const aborted = new ApiClient('k', fakeFetch(() => Promise.reject(Object.assign(new Error('x'), { name: 'AbortError' }))));
  assert.equal(((await aborted.get('/v1/x').catch((e: unknown) => e)) as ForkdError).code, 'CANCELLED');
});

test('204 answers resolve with nothing; socket URLs carry the key as api_key (browsers send no headers on upgrades)', async () => {
  const api = new ApiClient('fk a+b', fakeFetch(() => new Response(null, { status: 204 })));
  assert.equal(await api.json('DELETE', '/v1/sandboxes/sbx-1'), undefined);
  assert.equal(api.socketUrl('/v1/sandboxes/sbx-1/stream', { protocol: 'https:', host: 'h:1' }), 'wss://h:1/v1/sandboxes/sbx-1/stream?api_key=fk+a%2Bb');
  assert.equal(api.socketUrl('/s', { protocol: 'http:', host: 'h' }), 'ws://h/s?api_key=fk+a%2Bb');
  assert.equal(withQuery('/p', { a: 1, b: undefined, c: false }), '/p?a=1&c=false');
});

test('the key store keeps one item and forgets it', () => {
  const m = new Map<string, string>();
  const store = sessionKeyStore({ getItem: (k) => m.get(k) ?? null, setItem: (k, v) => void m.set(k, v), removeItem: (k) => void m.delete(k) });
  assert.equal(store.get(), undefined);
  store.set('fk_1');
  assert.equal(store.get(), 'fk_1');
  assert.equal(m.size, 1);
  store.clear();
  assert.equal(store.get(), undefined);
});
