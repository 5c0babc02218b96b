import { existsSync } from 'node:fs';
import { link, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT, startLocalAgent, type LocalAgent } from '../../testing/local-agent.js';

const KB = 1024;

/**
 * The real agent's WRITE_FILE over an existing file: it overwrites in place
 * and cuts the rest when the upload ends (see files_handle_write), which
 * must read exactly as O_TRUNC did.
 */
describe('guest agent: writing over an existing file', { skip: !existsSync(AGENT) && 'guest agent not built' }, () => {
  let local: LocalAgent;
  const f = (name: string) => join(local.dir, name);

  before(async () => {
    local = await startLocalAgent('forkd-write-');
  });
  after(() => local.stop());

  test('a shorter, an empty and a longer upload leave exactly what was sent; the file keeps its inode and mode', async () => {
    await writeFile(f('a'), Buffer.alloc(300 * KB, 'o'), { mode: 0o640 });
    const ino = (await stat(f('a'))).ino;
    await link(f('a'), f('a-link'));
    const short = Buffer.alloc(70 * KB, 'n');
    assert.equal(await local.guest.writeFile(f('a'), short), short.length);
    assert.deepEqual(await readFile(f('a')), short);
    assert.deepEqual(await readFile(f('a-link')), short, 'written in place: a hard link sees it');
    const st = await stat(f('a'));
    assert.equal(st.ino, ino);
    assert.equal(st.mode & 0o777, 0o640);
    assert.equal(await local.guest.writeFile(f('a'), Buffer.alloc(0)), 0);
    assert.equal((await stat(f('a'))).size, 0);
    const long = Buffer.alloc(500 * KB, 'l');
    await local.guest.writeFile(f('a'), long);
    assert.deepEqual(await readFile(f('a')), long);
  });

  test('uploads of many frames arrive whole: a buffer over several batches, a stream that refills one buffer', async () => {
    const big = Buffer.from(Array.from({ length: 3 * 1024 * KB + 12345 }, (_, i) => (i * 31 + (i >> 16)) & 255));
    assert.equal(await local.guest.writeFile(f('d'), big), big.length);
    assert.ok((await readFile(f('d'))).equals(big));
    // Each chunk yielded is the same memory, filled anew once the upload asks for the next: what went out of the previous fill must not change.
    const reused = Buffer.alloc(4096 * KB); // more than the socket takes at once: some of it waits in the daemon
    async function* refilled() {
      for (let i = 0; i < 4; i++) {
        reused.fill(65 + i);
        yield reused;
      }
    }
    const expected = Buffer.concat(Array.from({ length: 4 }, (_, i) => Buffer.alloc(4096 * KB, 65 + i)));
    assert.equal(await local.guest.writeFile(f('e'), refilled()), expected.length);
    assert.ok((await readFile(f('e'))).equals(expected));
  });

  test('appending keeps what was there', async () => {
    await writeFile(f('b'), 'head-');
    await local.guest.writeFile(f('b'), Buffer.from('tail'), { append: true });
    assert.equal(await readFile(f('b'), 'utf8'), 'head-tail');
  });

  test('an upload cut short leaves only the bytes received, none of the old file', async () => {
    await writeFile(f('c'), Buffer.alloc(1024 * KB, 'o'));
    async function* broken() {
      for (let i = 0; i < 3; i++) yield Buffer.alloc(64 * KB, 'n');
      throw new Error('the client went away');
    }
    await assert.rejects(local.guest.writeFile(f('c'), broken()), /went away/);
    // The agent finishes the upload when it reads the closed connection, in its own time.
    let data = await readFile(f('c'));
    for (let i = 0; i < 100 && data.includes('o'); i++) {
      await sleep(20);
      data = await readFile(f('c'));
    }
    assert.ok(data.length <= 192 * KB, `${data.length} bytes left`);
    assert.ok(!data.includes('o'), 'nothing of the old file is left');
  });
});
