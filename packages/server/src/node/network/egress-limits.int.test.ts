import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';
import { run } from '../../testing/helpers.js';
import { CONNS_PY, TIMED_PY } from '../../testing/net-probes.js';
import { FETCH_PY, startTestInternet, type TestInternet } from '../../testing/test-internet.js';

const [SERVER_A, SERVER_B] = ['203.0.113.2', '203.0.113.3'];
const MB = 1 << 20;

describe('egress limits: bandwidth, connections, forced denials (real tc, nftables)', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  let internet: TestInternet;

  const timed = async (id: string, dir: 'down' | 'up', bytes: number): Promise<number> => {
    const out = (await run(node.manager, id, ['python3', '-c', TIMED_PY, `http://${SERVER_A}:8080`, String(bytes), dir])).stdout.trim();
    assert.match(out, /^\d+\.\d+$/, `${dir}: ${out}`);
    return Number(out);
  };
  const conns = async (id: string, n: number) => (await run(node.manager, id, ['python3', '-c', CONNS_PY, SERVER_A, String(n)])).stdout.trim().split('\n');
  const reaches = async (id: string, addr: string) => (await run(node.manager, id, ['python3', '-c', FETCH_PY, `http://${addr}:8080/`])).stdout.trim() === `hello from ${addr}`;

  before(async () => {
    internet = await startTestInternet();
    node = await createTestNode();
  });

  after(async () => {
    await node?.dispose();
    await internet?.close();
  });

  test('bandwidth each way and concurrent connections are capped, change at runtime, and hold in a fork and after a rewind', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', bandwidthMbps: 8, maxConnections: 3 } });
    assert.deepEqual(s.network, { mode: 'egress', allowOut: [], denyOut: [], bandwidthMbps: 8, maxConnections: 3 });
    // 3 MB at 8 Mbit/s (1 MB/s): about 3 s; the buckets' bursts take a little off.
    const down = await timed(s.id, 'down', 3 * MB);
    assert.ok(down >= 2.4 && down < 15, `download of 3 MB at 8 Mbit/s took ${down} s`);
    // The upload's policer (nftables' limit) starts with a second's worth in its bucket: 4 MB take about 3 s.
    const up = await timed(s.id, 'up', 4 * MB);
    assert.ok(up >= 2.6 && up < 15, `upload of 4 MB at 8 Mbit/s took ${up} s`);
    assert.deepEqual(await conns(s.id, 3), ['held 3', 'extra False', 'after-close True']);

    // Raised at runtime: the next transfer follows.
    await node.manager.setNetwork(s.id, { mode: 'egress', bandwidthMbps: 80, maxConnections: 5 });
    const fast = await timed(s.id, 'down', 3 * MB);
    assert.ok(fast < 1.5, `download of 3 MB at 80 Mbit/s took ${fast} s`);
    assert.deepEqual(await conns(s.id, 5), ['held 5', 'extra False', 'after-close True']);

    // Snapshot under these limits, fork: the fork has them; then the parent's lowered and rewound: it keeps the lowered ones.
    const snap = await node.manager.snapshot(s.id);
    const [f] = await node.manager.fork(snap.id);
    assert.ok(f);
    assert.equal((await node.manager.get(f.id)).network?.maxConnections, 5);
    assert.deepEqual(await conns(f.id, 5), ['held 5', 'extra False', 'after-close True']);
    await node.manager.delete(f.id);
    await node.manager.setNetwork(s.id, { mode: 'egress', bandwidthMbps: 8, maxConnections: 2 });
    await node.manager.rewind(s.id, snap.id);
    const slow = await timed(s.id, 'down', 3 * MB);
    assert.ok(slow >= 2.4, `after the rewind, 3 MB at 8 Mbit/s took ${slow} s`);
    assert.deepEqual(await conns(s.id, 2), ['held 2', 'extra False', 'after-close True']);

    // Limits removed: unlimited again.
    await node.manager.setNetwork(s.id, { mode: 'egress' });
    assert.ok((await timed(s.id, 'down', 3 * MB)) < 1.5, 'unlimited');
    assert.deepEqual(await conns(s.id, 6), ['held 6', 'extra True', 'after-close True']);
    await node.manager.delete(s.id);
  });

  test('forcedDenyOut beats allowOut', async () => {
    const s = await node.manager.create({ template: 'base', memoryMb: 128, network: { mode: 'egress', allowOut: ['203.0.113.0/24'], forcedDenyOut: [`${SERVER_B}/32`] } });
    assert.equal(await reaches(s.id, SERVER_A), true);
    assert.equal(await reaches(s.id, SERVER_B), false, 'forced denial over the allow');
    await node.manager.setNetwork(s.id, { mode: 'egress', allowOut: ['203.0.113.0/24'] });
    assert.equal(await reaches(s.id, SERVER_B), true, 'denial removed');
    await node.manager.delete(s.id);
  });
});
