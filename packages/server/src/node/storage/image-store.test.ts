import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { storeImages } from './image-store.js';

test('stored images are byte-identical to the staged ones and staging is removed', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'forkd-img-'));
  try {
    const stage = join(dir, 'stage');
    await mkdir(stage);
    const pages = randomBytes(1024 * 1024 + 17);
    await writeFile(join(stage, 'pages-1.img'), pages);
    await writeFile(join(stage, 'core-1.img'), 'core');
    const st = await storeImages(stage, join(dir, 'dest'), undefined);
    assert.equal(st.files, 2);
    assert.equal(st.bytesTotal, pages.length + 4);
    assert.ok((await readFile(join(dir, 'dest', 'pages-1.img'))).equals(pages));
    await assert.rejects(readFile(join(stage, 'core-1.img')), { code: 'ENOENT' });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
