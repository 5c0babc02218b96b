import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT, startLocalAgent, type LocalAgent } from '../../testing/local-agent.js';
import type { GuestClient } from './guest-client.js';

async function download(guest: GuestClient, path: string, pauseEvery = 0): Promise<Buffer> {
  const f = await guest.readFile(path);
  const parts: Buffer[] = [];
  for await (const c of f.chunks) {
    parts.push(c);
    if (pauseEvery && parts.length % pauseEvery === 0) await sleep(5);
  }
  return Buffer.concat(parts);
}

/**
 * Every guest connection reads into one shared buffer (guest-connection.ts
 * READ_BUFFER): what a connection keeps must be its own copy, whatever the
 * other connections read meanwhile.
 */
describe('guest agent: downloads through the shared read buffer', { skip: !existsSync(AGENT) && 'guest agent not built' }, () => {
  let local: LocalAgent;
  before(async () => {
    local = await startLocalAgent('forkd-read-');
  });
  after(() => local.stop());

  test('four downloads at once, one of them read slowly, each arrives whole and unmixed', async () => {
    const files = await Promise.all(
      [3, 5, 1, 4].map(async (mb, i) => {
        const data = randomBytes(mb * 1024 * 1024 + 4099 * i);
        const path = join(local.dir, `f${i}`);
        await writeFile(path, data);
        return { path, data };
      }),
    );
    const got = await Promise.all(files.map((f, i) => download(local.guest, f.path, i === 1 ? 8 : 0)));
    for (const [i, f] of files.entries()) assert.ok(got[i]!.equals(f.data), `file ${i}`);
  });

  test('small files and an empty one', async () => {
    for (const size of [0, 1, 4, 5, 65535, 65536, 65537]) {
      const data = randomBytes(size);
      await writeFile(join(local.dir, 's'), data);
      assert.ok((await download(local.guest, join(local.dir, 's'))).equals(data), `size ${size}`);
    }
  });
});
