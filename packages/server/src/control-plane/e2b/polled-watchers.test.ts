import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NodeService, WatchHandle } from '../../node-contract/index.js';
import type { EnvdCall } from './envd-call.js';
import { OpenStreams } from './e2b-context.js';
import { MAX_WATCHERS, polledWatcherMethods, unreadEvents } from './polled-watchers.js';
import { RpcError } from './e2b-errors.js';

/** A node whose watches never end and whose every path is a directory; `emit` sends events to every watch made. */
function fakeCalls() {
  const listeners: ((e: { type: string; name: string }) => unknown)[] = [];
  const view = {
    stat: async () => ({ type: 'dir' }),
    watch: async (_id: string, _dir: string, _rec: boolean, on: (e: { type: string; name: string }) => unknown): Promise<WatchHandle> => {
      listeners.push(on);
      return { done: new Promise(() => {}), close: () => {} } as unknown as WatchHandle;
    },
  } as unknown as NodeService;
  const streams = new OpenStreams();
  const call = (id: string): EnvdCall => ({ id, view, user: 'user', requestId: 'r', streams });
  return { call, emit: async (e: { type: string; name: string }) => { for (const l of listeners) await l(e); } };
}

const { CreateWatcher, GetWatcherEvents, RemoveWatcher } = polledWatcherMethods as Required<typeof polledWatcherMethods>;

test('watchers are capped per sandbox and on the node, counting the ones being made', async () => {
  const { call } = fakeCalls();
  const made: [string, string][] = [];
  try {
    // 100 per sandbox: the node cap is reached by sandboxes that are each within theirs.
    for (let s = 0; made.length < MAX_WATCHERS; s++) {
      const batch = await Promise.allSettled(Array.from({ length: 101 }, () => CreateWatcher!(call(`s${s}`), { path: '/tmp' })));
      const ok = batch.filter((r) => r.status === 'fulfilled');
      assert.equal(ok.length, Math.min(100, MAX_WATCHERS - made.length));
      for (const r of ok) made.push([`s${s}`, (r.value as { watcherId: string }).watcherId]);
      const refused = batch.find((r) => r.status === 'rejected');
      assert.ok(refused && (refused.reason as RpcError).code === 'resource_exhausted');
    }
    assert.equal(made.length, MAX_WATCHERS);
    await assert.rejects(CreateWatcher!(call('fresh'), { path: '/tmp' }), (e: RpcError) => e.code === 'resource_exhausted' && /on this node/.test(e.message));
    const [sb, wid] = made.pop()!;
    await RemoveWatcher!(call(sb), { watcherId: wid });
    const again = (await CreateWatcher!(call('fresh'), { path: '/tmp' })) as { watcherId: string };
    made.push(['fresh', again.watcherId]);
  } finally {
    for (const [sb, wid] of made) await RemoveWatcher!(call(sb), { watcherId: wid });
  }
});

test('a flooded watcher keeps a bounded queue and gives its bytes back when removed', async () => {
  const { call, emit } = fakeCalls();
  const { watcherId } = (await CreateWatcher!(call('flood'), { path: '/tmp' })) as { watcherId: string };
  for (let i = 0; i < 5000; i++) await emit({ type: 'create', name: `f${i}` });
  assert.ok(unreadEvents.totalBytes > 0);
  const { events } = (await GetWatcherEvents!(call('flood'), { watcherId })) as { events: { name: string }[] };
  assert.equal(events.length, 1000);
  assert.equal(events[0]!.name, 'f0', 'the earliest are kept, later ones dropped');
  await emit({ type: 'create', name: 'late' });
  await RemoveWatcher!(call('flood'), { watcherId });
  assert.equal(unreadEvents.totalBytes, 0);
});
