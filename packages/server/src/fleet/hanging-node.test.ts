import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { ForkdError } from '@forkd/protocol';
import { fakeService } from '../control-plane/http/app-test-kit.js';
import { listenNode, type RunningNodeServer } from '../node-http/node-http-server.js';
import { silentLogger } from '../shared/logger.js';
import { MemoryFleetStore } from '../testing/memory-fleet-store.js';
import { testCipher } from '../testing/test-cipher.js';
import { openFleet, type Fleet } from './fleet.js';

const TIMEOUTS = { readMs: 300, lifecycleMs: 600, transferMs: 900 };
const capacity = { memoryBytes: 8 * 2 ** 30, memoryFreeBytes: 4 * 2 ** 30, cpus: 4, poolFreeBytes: 10 * 2 ** 30, running: 0, paused: 0, templates: ['base'] };
const code = (c: string) => (err: unknown) => err instanceof ForkdError && err.code === c;

/** How long `p` takes to settle, in ms. */
async function took(p: Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await p.catch(() => {});
  return performance.now() - t0;
}

describe('fleet: a node that accepts connections and never answers', () => {
  const good = fakeService();
  let server: RunningNodeServer;
  const hanging = net.createServer((s) => s.on('error', () => {}));
  const held = new Set<net.Socket>();
  let fleet: Fleet;

  before(async () => {
    hanging.on('connection', (s) => held.add(s));
    await new Promise<void>((r) => hanging.listen(0, '127.0.0.1', r));
    server = await listenNode({ node: good, token: 'fnt_good-node-token-0123', logger: silentLogger }, '127.0.0.1', 0);
    fleet = openFleet({ store: new MemoryFleetStore(), cipher: testCipher(), joinToken: 'fjt_test', deadlineMs: 60_000, callTimeouts: TIMEOUTS });
    await fleet.nodes.heartbeat({ id: 'good', url: server.url, token: 'fnt_good-node-token-0123', capacity });
    await fleet.nodes.heartbeat({ id: 'hung', url: `http://127.0.0.1:${(hanging.address() as net.AddressInfo).port}`, token: 'fnt_hung-node-token-0123', capacity });
  });
  after(async () => {
    fleet.close();
    for (const s of held) s.destroy();
    hanging.close();
    await server.close();
  });

  test('lists answer with the other nodes within the read deadline, the hung one left out', async () => {
    let listed: string[] = [];
    const ms = await took(fleet.node.list().then((l) => (listed = l.map((s) => s.id))));
    assert.deepEqual(listed, (await good.list()).map((s) => s.id));
    assert.ok(listed.length > 0);
    assert.ok(ms < TIMEOUTS.readMs + 700, `${Math.round(ms)} ms`);
    assert.deepEqual((await fleet.node.templates()).map((t) => t.name), ['base']);
  });

  test('an id no node answers for is NOT_FOUND after the read deadline (the hung node does not hold it)', async () => {
    const p = fleet.node.get('sbx-zzzzzzzzzzzz');
    assert.ok((await took(p)) < TIMEOUTS.readMs + 700);
    await assert.rejects(p, code('NOT_FOUND'));
  });

  test('calls on a sandbox placed on the hung node fail with TIMEOUT at their deadline', async () => {
    await fleet.service.store.place('sandbox', 'sbx-hhhhhhhhhhhh', 'hung');
    await assert.rejects(fleet.node.get('sbx-hhhhhhhhhhhh'), code('TIMEOUT'));
    const pause = fleet.node.pause('sbx-hhhhhhhhhhhh');
    const ms = await took(pause);
    await assert.rejects(pause, code('TIMEOUT'));
    assert.ok(ms >= TIMEOUTS.lifecycleMs - 20 && ms < TIMEOUTS.lifecycleMs + 700, `${Math.round(ms)} ms`);
  });
});
