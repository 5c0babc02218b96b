import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError, type SandboxInfo, type SnapshotInfo } from '@forkd/protocol';
import { ForkdClient } from './client.js';
import { sandboxInfo, sendJson, startFakeServer, type FakeRequest } from './fake-server.js';
import type { ForkTree } from './types.js';

const ID = 'sbx-aaaaaaaaaaaa';
const SNAP = 'snap-bbbbbbbbbbbb';


function snapshotInfo(id: string, extra: Partial<SnapshotInfo> = {}): SnapshotInfo {
  return { id, sandboxId: ID, createdAt: '2025-01-01T00:00:01.000Z', frozenMs: 12.5, sizeBytes: 4096, pinned: false, reason: 'manual', ...extra };
}

/** A scripted server for the snapshot routes; every answer is shaped like the real one. */
async function withServer(fn: (client: ForkdClient, requests: FakeRequest[]) => Promise<void>) {
  let forks = 0;
  const forked = (n: number, from: string) => Array.from({ length: n }, () => sandboxInfo(`sbx-fork0000000${++forks}`, { forkedFrom: from }));
  const srv = await startFakeServer((req, res) => {
    const route = `${req.method} ${req.url.pathname}`;
    const body = req.body.length ? (JSON.parse(req.body.toString()) as Record<string, unknown>) : {};
    switch (route) {
      case `GET /v1/sandboxes/${ID}`:
        return sendJson(res, 200, sandboxInfo(ID));
      case `POST /v1/sandboxes/${ID}/snapshots`:
        return sendJson(res, 201, snapshotInfo(SNAP, body.name !== undefined ? { name: body.name as string } : {}));
      case `GET /v1/sandboxes/${ID}/snapshots`:
        return sendJson(res, 200, { snapshots: [snapshotInfo(SNAP), snapshotInfo('snap-cccccccccccc', { parentId: SNAP, reason: 'pause', pinned: true })] });
      case `POST /v1/sandboxes/${ID}/pause`:
        return sendJson(res, 200, sandboxInfo(ID, { state: 'paused' }));
      case `POST /v1/sandboxes/${ID}/resume`:
      case `POST /v1/sandboxes/${ID}/rewind`:
        return sendJson(res, 200, sandboxInfo(ID));
      case `POST /v1/sandboxes/${ID}/fork`:
        return sendJson(res, 201, { sandboxes: forked((body.count as number | undefined) ?? 1, 'snap-implicit00000') });
      case `POST /v1/snapshots/${SNAP}/fork`:
        return sendJson(res, 201, { sandboxes: forked((body.count as number | undefined) ?? 1, SNAP) });
      case `GET /v1/sandboxes/${ID}/tree`:
        return sendJson(res, 200, {
          sandbox: sandboxInfo(ID),
          children: [{ sandbox: sandboxInfo('sbx-child0000001', { forkedFrom: SNAP }), children: [] }],
        } satisfies ForkTree);
      case `GET /v1/snapshots/${SNAP}`:
        return sendJson(res, 200, snapshotInfo(SNAP));
      case `DELETE /v1/snapshots/${SNAP}`:
        res.writeHead(204).end();
        return;
    }
    sendJson(res, 404, { error: { code: 'NOT_FOUND', message: `no route ${route}` } });
  });
  try {
    await fn(new ForkdClient({ url: srv.url }), srv.requests);
  } finally {
    await srv.close();
  }
}

const bodyOf = (r: FakeRequest | undefined) => (r?.body.length ? JSON.parse(r.body.toString()) : undefined);

test('snapshot sends only the name given; timeline is oldest first', async () => {
  await withServer(async (client, requests) => {
    const sb = await client.sandboxes.get(ID);
    assert.deepEqual(await sb.snapshot({ name: 'before-install' }), snapshotInfo(SNAP, { name: 'before-install' }));
    assert.deepEqual(bodyOf(requests.at(-1)), { name: 'before-install' });
    await sb.snapshot();
    assert.deepEqual(bodyOf(requests.at(-1)), {});
    const tl = await sb.timeline();
    assert.deepEqual(tl.map((s) => s.id), [SNAP, 'snap-cccccccccccc']);
    assert.equal(tl[1]!.reason, 'pause');
  });
});

test('pause, resume and rewind return the new info and keep `info` current', async () => {
  await withServer(async (client, requests) => {
    const sb = await client.sandboxes.get(ID);
    assert.equal((await sb.pause()).state, 'paused');
    assert.equal(sb.info.state, 'paused');
    assert.equal((await sb.resume()).state, 'running');
    assert.equal(sb.info.state, 'running');
    await sb.pause();
    await sb.rewind(SNAP);
    assert.equal(sb.info.state, 'running');
    assert.deepEqual(bodyOf(requests.at(-1)), { snapshot: SNAP });
    await sb.rewind(snapshotInfo(SNAP));
    assert.deepEqual(bodyOf(requests.at(-1)), { snapshot: SNAP });
    assert.deepEqual(
      requests.map((r) => `${r.method} ${r.url.pathname.replace(`/v1/sandboxes/${ID}`, '')}`),
      ['GET ', 'POST /pause', 'POST /resume', 'POST /pause', 'POST /rewind', 'POST /rewind'],
    );
    assert.equal(bodyOf(requests[1]), undefined, 'a plain pause sends no body');
  });
});

test('pause({ memory: false }) and resume({ memory: false }) send the flag', async () => {
  await withServer(async (client, requests) => {
    const sb = await client.sandboxes.get(ID);
    assert.equal((await sb.pause({ memory: false })).state, 'paused');
    assert.deepEqual(bodyOf(requests.at(-1)), { memory: false });
    await sb.resume({ memory: false });
    assert.deepEqual(bodyOf(requests.at(-1)), { memory: false });
    await sb.pause({ memory: true });
    assert.equal(bodyOf(requests.at(-1)), undefined);
  });
});

test('fork: live from a sandbox or from a snapshot id, returns usable Sandbox handles', async () => {
  await withServer(async (client, requests) => {
    const sb = await client.sandboxes.get(ID);
    const one = await sb.fork();
    assert.equal(one.length, 1);
    assert.deepEqual(bodyOf(requests.at(-1)), {});
    const three = await sb.fork({ count: 3 });
    assert.deepEqual(bodyOf(requests.at(-1)), { count: 3 });
    assert.equal(new Set(three.map((s) => s.id)).size, 3);
    assert.equal(three[0]!.info.forkedFrom, 'snap-implicit00000');

    const fromSnap = await client.snapshots.fork(SNAP, { count: 2, metadata: { k: 'v' }, env: { FOO: 'bar' } });
    assert.equal(requests.at(-1)!.url.pathname, `/v1/snapshots/${SNAP}/fork`);
    assert.deepEqual(bodyOf(requests.at(-1)), { count: 2, metadata: { k: 'v' }, env: { FOO: 'bar' } });
    assert.deepEqual(fromSnap.map((s) => s.info.forkedFrom), [SNAP, SNAP]);
    // The handles talk to the same server.
    await assert.rejects(fromSnap[0]!.metrics(), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
    assert.match(requests.at(-1)!.url.pathname, /^\/v1\/sandboxes\/sbx-fork\w+\/metrics$/);
  });
});

test('tree, snapshots.get and snapshots.delete', async () => {
  await withServer(async (client, requests) => {
    const sb = await client.sandboxes.get(ID);
    const tree = await sb.tree();
    assert.equal(tree.sandbox.id, ID);
    assert.equal(tree.children[0]!.sandbox.forkedFrom, SNAP);
    assert.deepEqual(tree.children[0]!.children, []);

    assert.equal((await client.snapshots.get(SNAP)).frozenMs, 12.5);
    await client.snapshots.delete(SNAP);
    assert.equal(requests.at(-1)!.method, 'DELETE');
    await assert.rejects(client.snapshots.get('snap-nope'), (e: unknown) => e instanceof ForkdError && e.code === 'NOT_FOUND');
  });
});

test('snapshot ids are escaped into the path', async () => {
  await withServer(async (client, requests) => {
    await assert.rejects(client.snapshots.get('a/b?c'));
    assert.equal(requests.at(-1)!.url.pathname, '/v1/snapshots/a%2Fb%3Fc');
  });
});
