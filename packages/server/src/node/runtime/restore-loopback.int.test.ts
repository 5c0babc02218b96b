import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { run, waitFor } from '../../testing/helpers.js';
import { createTestNode, isRoot, type TestNode } from '../../testing/test-node.js';

/** Two ends of one TCP connection over 127.0.0.1, held open; a ping through it whenever /tmp/ping appears. */
const PAIR = `
import os, socket, time
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(('127.0.0.1', 9009)); srv.listen(1)
cli = socket.create_connection(('127.0.0.1', 9009)); conn, _ = srv.accept()
open('/tmp/ready', 'w').write('1')
while True:
    if os.path.exists('/tmp/ping'):
        os.remove('/tmp/ping')
        cli.sendall(b'ping'); conn.sendall(conn.recv(4).upper())
        open('/tmp/pong.tmp', 'w').write(cli.recv(4).decode()); os.rename('/tmp/pong.tmp', '/tmp/pong')
    time.sleep(0.05)
`;

/**
 * A sandbox in a user namespace has a network namespace CRIU makes at each
 * restore, its loopback down until runc's createRuntime hook brings it up
 * (oci-spec.ts loopbackHook): established connections over 127.0.0.1 are
 * restored only over a loopback that is up, so without the hook a fork or a
 * rewind of such a sandbox fails.
 */
describe('an established TCP connection over 127.0.0.1 survives fork and rewind', { skip: !isRoot && 'needs root' }, () => {
  let node: TestNode;
  before(async () => {
    node = await createTestNode();
  });
  after(() => node?.dispose());

  const ping = async (id: string) => {
    await run(node.manager, id, 'rm -f /tmp/pong; touch /tmp/ping');
    return waitFor(async () => (await run(node.manager, id, 'cat /tmp/pong 2>/dev/null')).stdout, 10_000, `a pong in ${id}`);
  };

  test('fork, then rewind: the same connection carries a ping', async () => {
    const m = node.manager;
    const s = await m.create({});
    (await m.spawn(s.id, { argv: ['python3', '-c', PAIR], tag: 'pair' })).process.detach();
    await waitFor(async () => (await run(m, s.id, ['test', '-e', '/tmp/ready'])).exitCode === 0 || undefined, 10_000, 'the pair connected');
    assert.equal(await ping(s.id), 'PING');
    const snap = await m.snapshot(s.id);
    const [f] = await m.fork(snap.id);
    assert.ok(f);
    assert.equal(await ping(f.id), 'PING', 'in the fork');
    await m.rewind(s.id, snap.id);
    assert.equal(await ping(s.id), 'PING', 'after a rewind');
  });
});
