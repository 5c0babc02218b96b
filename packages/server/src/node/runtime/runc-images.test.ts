import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { dumpedWithDevInRoot, IDMAP_FILE, LAYOUT_FILE, readIdmap } from './runc-images.js';

test('the records in a checkpoint: read when whole, absent in older images, a clear INTERNAL error when damaged', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-images-'));
  t.after(() => rm(dir, { recursive: true, force: true }));
  assert.equal(await readIdmap(dir), undefined);
  // Images from before the layout record: a tmpfs archive of /dev means a tmpfs /dev.
  assert.equal(await dumpedWithDevInRoot(dir), true);
  await writeFile(join(dir, 'tmpfs-dev-12.tar.gz.img'), '');
  assert.equal(await dumpedWithDevInRoot(dir), false);

  await writeFile(join(dir, IDMAP_FILE), JSON.stringify({ hostId: 2 ** 31, size: 65536 }));
  await writeFile(join(dir, LAYOUT_FILE), JSON.stringify({ devInRoot: true }));
  assert.deepEqual(await readIdmap(dir), { hostId: 2 ** 31, size: 65536 });
  assert.equal(await dumpedWithDevInRoot(dir), true);

  const damaged = (name: string) => (err: unknown) => err instanceof ForkdError && err.code === 'INTERNAL' && err.message.includes(name) && !err.message.includes(dir);
  await writeFile(join(dir, IDMAP_FILE), '{"hostId":0,"size":65536}');
  await assert.rejects(readIdmap(dir), damaged(IDMAP_FILE));
  await writeFile(join(dir, LAYOUT_FILE), '{"devInRoot":');
  await assert.rejects(dumpedWithDevInRoot(dir), damaged(LAYOUT_FILE));
});
