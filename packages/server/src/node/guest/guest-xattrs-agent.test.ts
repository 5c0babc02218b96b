import { existsSync } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ForkdError } from '@forkd/protocol';
import { GuestClient } from './guest-client.js';
import { AGENT, startLocalAgent, type LocalAgent } from '../../testing/local-agent.js';
import { GuestConnection, unixDialer } from './guest-connection.js';
import { encodeFrame, encodeTlv, FrameReader, K, T, Tlv } from './guest-frames.js';

/** The real agent, outside a container (`--socket`), on a real file system: file metadata (protocol 3). */
describe('guest protocol 3: file metadata as user.* xattrs', { skip: !existsSync(AGENT) && 'guest agent not built' }, () => {
  let dir: string;
  let guest: GuestClient;
  const sock = () => local.sock;
  const f = (name: string) => join(dir, name);
  const sh = async (script: string) => {
    const p = await guest.spawn({ argv: ['/bin/sh', '-c', script] });
    assert.deepEqual(await p.done, { exitCode: 0, signal: 0 });
  };

  let local: LocalAgent;

  before(async () => {
    local = await startLocalAgent('forkd-xattr-');
    dir = local.dir;
    guest = local.guest;
  });
  after(() => local.stop());

  test('a write sets metadata; stat and listings report it', async () => {
    await guest.writeFile(f('a.txt'), Buffer.from('hello'), { metadata: { author: 'mish', 'e2b.purpose': 'upload' } });
    assert.deepEqual((await guest.stat(f('a.txt'))).metadata, { author: 'mish', 'e2b.purpose': 'upload' });
    const listed = (await guest.listDir(dir)).find((e) => e.name === 'a.txt');
    assert.deepEqual(listed?.metadata, { author: 'mish', 'e2b.purpose': 'upload' });
    assert.equal((await guest.stat(sock())).metadata, undefined, 'a socket carries none');
  });

  test('a scope replaces only its own keys; a write without metadata keeps them (a rewrite does)', async () => {
    await guest.writeFile(f('b.txt'), Buffer.from('1'), { metadata: { mine: 'x', 'e2b.a': '1', 'e2b.b': '2' } });
    await guest.writeFile(f('b.txt'), Buffer.from('2'), { metadata: { 'e2b.b': '3' }, metadataScope: 'e2b.' });
    assert.deepEqual((await guest.stat(f('b.txt'))).metadata, { mine: 'x', 'e2b.b': '3' });
    await guest.writeFile(f('b.txt'), Buffer.from('3'));
    assert.deepEqual((await guest.stat(f('b.txt'))).metadata, { mine: 'x', 'e2b.b': '3' });
    await guest.writeFile(f('b.txt'), Buffer.from('4'), { metadata: {} });
    assert.equal((await guest.stat(f('b.txt'))).metadata, undefined);
  });

  test('attributes set inside the sandbox show; ones the host cannot take are left out', async () => {
    await guest.writeFile(f('c.txt'), Buffer.from('x'));
    const py = `import os; p='${f('c.txt')}'; os.setxattr(p,'user.e2b.author',b'mish'); os.setxattr(p,'user.nul',b'a\\x00b'); os.setxattr(p,'user.bin',b'\\xff'); os.setxattr(p,'user.k=v',b'1'); os.setxattr(p,'trusted.x',b'1') if os.geteuid()==0 else None`;
    await sh(`python3 -c "${py}"`);
    assert.deepEqual((await guest.stat(f('c.txt'))).metadata, { 'e2b.author': 'mish' });
    await sh(`mkdir -p ${f('d')} && python3 -c "import os; os.setxattr('${f('d')}','user.tag',b'dir')"`);
    assert.deepEqual((await guest.stat(f('d'))).metadata, { tag: 'dir' });
  });

  test('the agent refuses bad XATTR lists before it creates the file', async () => {
    const bad = [['=v'], ['novalue'], [`${'k'.repeat(251)}=v`], [`k=${'v'.repeat(4097)}`], Array.from({ length: 65 }, (_, i) => `k${i}=v`)];
    for (const xattrs of bad) {
      const conn = await GuestConnection.open(unixDialer(sock()));
      conn.send(T.WRITE_FILE, [[K.PATH, f('bad/never.txt')], ...xattrs.map((x) => [K.XATTR, x] as const)]);
      await conn.handshake();
      await assert.rejects(conn.expect(T.OK), (e: unknown) => e instanceof ForkdError && e.details?.errno === 'EINVAL');
      conn.close();
    }
    await assert.rejects(stat(f('bad')), { code: 'ENOENT' });
  });

  test('an agent of protocol 2 is stepped down to; it gets no metadata to drop silently', async () => {
    const old = join(dir, 'old.sock');
    const seen: number[] = [];
    const server = await fakeAgent(old, 2, seen);
    try {
      const g = new GuestClient(unixDialer(old));
      await assert.rejects(g.writeFile(f('e.txt'), Buffer.from('x'), { metadata: { k: 'v' } }), (e: unknown) => e instanceof ForkdError && e.code === 'FAILED_PRECONDITION');
      assert.deepEqual(seen, [3], 'once known to speak 2, it is not even connected to');
      assert.equal((await g.info()).version, 2);
      assert.deepEqual(seen, [3, 2]);
      const e = await g.stat('/x');
      assert.equal(e.type, 'file');
      assert.equal('metadata' in e, false, 'an entry without XATTR has no metadata');
    } finally {
      server.close();
    }
  });
});

/** Answers HELLO above `max` with EPROTO, else HELLO_OK, then INFO and STAT as a v2 agent would: one of an older snapshot. */
async function fakeAgent(path: string, max: number, seen: number[]): Promise<Server> {
  const server = createServer((s) => {
    const r = new FrameReader();
    s.on('data', (chunk) => {
      for (const fr of r.push(chunk)) {
        if (fr.type === T.HELLO) {
          const v = new Tlv(fr.payload).reqInt(K.VERSION);
          seen.push(v);
          if (v > max) s.end(encodeFrame(T.ERROR, encodeTlv([[K.CODE, 'EPROTO'], [K.MESSAGE, 'unsupported']])));
          else s.write(encodeFrame(T.HELLO_OK, encodeTlv([[K.VERSION, v], [K.AGENT, `fake/${max}`]])));
        } else if (fr.type === T.INFO) s.end(encodeFrame(T.OK, encodeTlv([[K.VERSION, max]])));
        else if (fr.type === T.STAT) s.end(encodeFrame(T.ENTRY, encodeTlv([[K.NAME, '/x'], [K.TYPE, 'file'], [K.SIZE, 1], [K.MODE, 0o100644], [K.MTIME, 0], [K.UID, 0], [K.GID, 0]])));
      }
    });
    s.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  return server;
}
