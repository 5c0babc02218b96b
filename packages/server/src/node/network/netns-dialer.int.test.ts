import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createServer, type Server, type Socket } from 'node:net';
import { readdir, readFile } from 'node:fs/promises';
import { exec, spawnStream } from '../../shared/exec.js';
import { isRoot } from '../../testing/test-node.js';
import { NetnsDialer, type DialResult } from './netns-dialer.js';

const skip = !isRoot && 'needs root (network namespaces, setns)';

/**
 * In the namespace: 7101 answers "ns:<what it read>" and closes; 7102 listens
 * with a backlog of one and accepts nothing (once full, connects never
 * complete); 7103 sends half a reply and resets the connection.
 */
const SERVERS = `
import socket, struct, threading, time
def serve(port, fn, backlog=64, accept=True):
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', port)); s.listen(backlog)
    def loop():
        while True:
            c, _ = s.accept(); threading.Thread(target=fn, args=(c,), daemon=True).start()
    if accept: threading.Thread(target=loop, daemon=True).start()
    return s
def echo(c):
    c.sendall(b'ns:' + c.recv(100)); c.close()
def half(c):
    c.sendall(b'HTTP/1.1 200 OK\\r\\ncontent-length: 100\\r\\n\\r\\nhalf'); time.sleep(0.05)
    c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii', 1, 0)); c.close()
keep = [serve(7101, echo), serve(7102, None, backlog=0, accept=False), serve(7103, half)]
print('ready', flush=True)
time.sleep(1e9)
`;

function socketOf(r: DialResult): Socket {
  assert.ok('socket' in r, `a socket, not ${JSON.stringify(r)}`);
  return r.socket;
}

async function readAll(s: Socket): Promise<string> {
  let got = '';
  s.on('data', (d: Buffer) => (got += d.toString()));
  await new Promise<void>((resolve) => s.on('close', () => resolve()));
  return got;
}

/** The processes this one has started that are still alive. */
async function children(): Promise<number> {
  let n = 0;
  for (const t of await readdir('/proc/self/task')) n += (await readFile(`/proc/self/task/${t}/children`, 'utf8')).split(' ').filter(Boolean).length;
  return n;
}

describe('NetnsDialer (forkd-netns-dial)', { skip }, () => {
  const ns = `forkd-dial-${randomBytes(3).toString('hex')}`;
  const path = `/run/netns/${ns}`;
  let servers: ReturnType<typeof spawnStream>;
  let host: Server;
  const dialer = new NetnsDialer({ connectMs: 500 });

  before(async () => {
    await exec('ip', ['netns', 'add', ns]);
    await exec('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
    servers = spawnStream('ip', ['netns', 'exec', ns, 'python3', '-c', SERVERS]);
    servers.stream.on('error', () => {});
    await new Promise<void>((resolve) => servers.stream.on('data', (d: Buffer) => d.toString().includes('ready') && resolve()));
    // The same port on the host's loopback: a dial must never reach it.
    host = createServer((s) => s.end('host')).listen(7101, '127.0.0.1');
  });
  after(async () => {
    dialer.close();
    host?.close();
    servers?.kill();
    await servers?.exit;
    await exec('ip', ['netns', 'del', ns], { allowFailure: true });
  });

  test('one resident process makes every connection, in the namespace and not the host', async () => {
    const first = socketOf(await dialer.dial(path, 7101));
    const pid = dialer.pid;
    assert.ok(pid > 0);
    first.end('0');
    assert.equal(await readAll(first), 'ns:0');
    const before = await children();
    for (let round = 0; round < 4; round++) {
      const open = await Promise.all(Array.from({ length: 5 }, () => dialer.dial(path, 7101).then(socketOf)));
      // While they are open: a relay per connection would be a child each.
      assert.equal(await children(), before, 'no process per open connection');
      const replies = await Promise.all(
        open.map((s, i) => {
          s.end(`${round}.${i}`);
          return readAll(s);
        }),
      );
      assert.deepEqual(replies, open.map((_, i) => `ns:${round}.${i}`));
    }
    assert.equal(dialer.pid, pid, 'the same helper');
    assert.equal(await children(), before, 'no process started per connection');
    assert.equal(dialer.waiting, 0);
  });

  test('a closed port is refused; a path that is no namespace, or none, is an error', async () => {
    assert.deepEqual(await dialer.dial(path, 7199), { refused: true });
    const notNs = await dialer.dial('/etc/hostname', 7101);
    assert.ok('error' in notNs && /namespace/.test(notNs.error), JSON.stringify(notNs));
    const none = await dialer.dial(`/run/netns/${ns}-none`, 7101);
    assert.ok('error' in none, JSON.stringify(none));
  });

  test('a listener that never accepts: its connects time out, other dials are served meanwhile', async () => {
    // Fill the backlog: these may connect (the kernel's queue) but are never accepted.
    const filling = await Promise.all(Array.from({ length: 4 }, () => dialer.dial(path, 7102)));
    const t0 = Date.now();
    const stuck = dialer.dial(path, 7102);
    const s = socketOf(await dialer.dial(path, 7101));
    assert.ok(Date.now() - t0 < 400, 'not queued behind the stuck connect');
    s.end('x');
    assert.equal(await readAll(s), 'ns:x');
    const r = await stuck;
    assert.ok('error' in r && /timed out/i.test(r.error), JSON.stringify(r));
    for (const f of filling) if ('socket' in f) f.socket.destroy();
    assert.equal(dialer.waiting, 0);
  });

  test('a server that resets mid-reply: the socket sees the reset, nothing else is hurt', async () => {
    const s = socketOf(await dialer.dial(path, 7103));
    const err = new Promise<Error | undefined>((resolve) => {
      s.on('error', resolve);
      s.on('close', () => resolve(undefined));
    });
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    s.write('GET / HTTP/1.1\r\n\r\n');
    assert.match(String((await err)?.message), /ECONNRESET/);
    assert.match(got, /half$/);
    const next = socketOf(await dialer.dial(path, 7101));
    next.end('y');
    assert.equal(await readAll(next), 'ns:y');
  });

  test('the helper killed: dials waiting get an error, the next dial starts another', async () => {
    const pid = dialer.pid;
    assert.ok(pid > 0);
    const waiting = dialer.dial(path, 7102);
    process.kill(pid, 'SIGKILL');
    const r = await waiting;
    assert.ok('error' in r, JSON.stringify(r));
    const s = socketOf(await dialer.dial(path, 7101));
    assert.notEqual(dialer.pid, pid);
    s.end('z');
    assert.equal(await readAll(s), 'ns:z');
  });
});
