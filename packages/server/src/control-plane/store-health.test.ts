import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ForkdError } from '@forkd/protocol';
import { testApp } from './http/app-test-kit.js';
import { checkStore } from './store-health.js';

const unavailable = (err: unknown) => err instanceof ForkdError && err.code === 'UNAVAILABLE' && err.cause instanceof Error;

test('checkStore: a store that answers passes; one that fails or hangs is UNAVAILABLE within the deadline', async () => {
  await checkStore({ ping: async () => {} }, 100);
  await assert.rejects(checkStore({ ping: async () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.9:5432')) }, 100), unavailable);
  const t0 = performance.now();
  await assert.rejects(checkStore({ ping: () => new Promise(() => {}) }, 100), unavailable);
  const ms = performance.now() - t0;
  assert.ok(ms >= 95 && ms < 1000, `${Math.round(ms)} ms`);
});

test('GET /v1/health: 200 while the store answers, 503 UNAVAILABLE once it does not (and nothing of the cause in the answer)', async () => {
  const { app, control } = await testApp();
  const ok = await app.request('/v1/health');
  assert.equal(ok.status, 200);
  assert.deepEqual(await ok.json(), { ok: true });
  await control.store.close();
  const down = await app.request('/v1/health');
  assert.equal(down.status, 503);
  const body = (await down.json()) as { error: { code: string; message: string } };
  assert.equal(body.error.code, 'UNAVAILABLE');
  assert.equal(body.error.message, "the control plane's database does not answer");
});
