import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { OutputHandlers, ProcessStream, ResumePoint } from '../../node-contract/index.js';
import { silentLogger } from '../../shared/logger.js';
import { SqliteControlStore } from '../../store/sqlite-control-store.js';
import { testCipher } from '../../testing/test-cipher.js';
import { ApiKeys } from '../auth/api-keys.js';
import { AuthThrottle } from '../auth/auth-throttle.js';
import { TenantQuotas } from '../quota/tenant-quotas.js';
import { fakeService, info, ndjson, testApp } from './app-test-kit.js';
import { apiHandlers, serveApi } from './server.js';

/** A process whose output the test drives; `detached` resolves when the stream lets go of it. */
function fakeProcess(resume: ResumePoint) {
  let letGo!: () => void;
  const detached = new Promise<void>((r) => (letGo = r));
  let exit!: (e: { exitCode: number; signal: number; oomKilled: boolean } | null) => void;
  const stream: ProcessStream = {
    process: { pid: 5, tag: undefined, pty: false, resume, write: async () => {}, closeStdin() {}, signal() {}, resize() {}, detach: () => (letGo(), exit(null)) },
    exit: new Promise((r) => (exit = r)),
  };
  return { stream, detached, exit: (e: { exitCode: number; signal: number; oomKilled: boolean } | null) => exit(e) };
}

test('a resuming re-attach passes its token and offset to the node; output the node delivers before the start waits for `started`, which gives the resume point', async () => {
  const svc = fakeService();
  const asked: Array<ResumePoint | undefined> = [];
  svc.attach = async (_id, _sel, h: OutputHandlers = {}, resume) => {
    asked.push(resume);
    const p = fakeProcess({ token: 7, offset: resume?.offset ?? 0 });
    // As a guest connection can: a position and output before the attach has even returned.
    void h.onPosition?.(40);
    void h.onStdout?.(Buffer.from('x'));
    setTimeout(() => p.exit({ exitCode: 3, signal: 0, oomKilled: false }), 20);
    return p.stream;
  };
  const { app, admin } = await testApp(svc);
  const get = (q: string) => app.request(`/v1/sandboxes/${info.id}/processes/5/output${q}`, { headers: { authorization: `Bearer ${admin}` } });
  const events = await ndjson(await get('?token=7&offset=12'));
  assert.deepEqual(asked, [{ token: 7, offset: 12 }]);
  assert.deepEqual(events.map((e) => e.type), ['started', 'position', 'stdout', 'exit']);
  assert.deepEqual(events[0], { type: 'started', pid: 5, pty: false, token: 7, offset: 12 });
  assert.equal(events[1].offset, 40);
  for (const q of ['?token=7', '?offset=3', '?token=-1&offset=0', `?token=${2 ** 48}&offset=0`, '?token=1&offset=x', '?token=1&offset=0&other=1']) {
    assert.equal((await get(q)).status, 400, q);
  }
  assert.equal(asked.length, 1, 'nothing refused reached the node');
  const plain = await ndjson(await get(''));
  assert.deepEqual(asked[1], undefined);
  assert.equal(plain.at(-1).type, 'exit');
});

test('a stopping server ends open streams cleanly: the output handed to them arrives, the stream ends without an exit, the process is only let go of', async () => {
  const store = new SqliteControlStore(':memory:');
  const control = { store, keys: new ApiKeys(store, new AuthThrottle({ burst: 10_000 })), quotas: new TenantQuotas(store), cipher: testCipher(), close: () => store.close() };
  const admin = (await control.keys.create({ format: 'forkd', admin: true }, undefined)).key;
  const svc = fakeService();
  let detached: Promise<void> | undefined;
  const big = Buffer.alloc(60_000, 'a');
  svc.attach = async (_id, _sel, h: OutputHandlers = {}) => {
    const p = fakeProcess({ token: 1, offset: 0 });
    detached = p.detached;
    // Output handed over right before the stop: it must reach the client, not be cut with the connection.
    setTimeout(() => {
      for (let i = 0; i < 20; i++) void h.onStdout?.(big);
    }, 30);
    return p.stream;
  };
  const server = await serveApi(apiHandlers({ svc, control, logger: silentLogger }), '127.0.0.1', 0);
  const res = await fetch(`${server.url}/v1/sandboxes/${info.id}/processes/5/output`, { headers: { authorization: `Bearer ${admin}` } });
  await new Promise((r) => setTimeout(r, 200));
  const t0 = performance.now();
  const closing = server.close();
  const events = await ndjson(res as unknown as Response);
  await closing;
  await detached;
  const bytes = events.filter((e) => e.type === 'stdout').reduce((n, e) => n + Buffer.from(e.data, 'base64').length, 0);
  assert.equal(bytes, 20 * big.length, 'every byte handed to the stream arrived');
  assert.equal(events.at(-1).type, 'stdout', 'no exit, no error: the client resumes');
  assert.ok(performance.now() - t0 < 2000, `closed in ${Math.round(performance.now() - t0)} ms`);
  store.close();
});
