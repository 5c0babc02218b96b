import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { exec } from '../../shared/exec.js';
import { silentLogger } from '../../shared/logger.js';
import { fakeImages } from '../../testing/fake-runtime.js';
import { MemoryStorage } from '../../testing/memory-storage.js';
import { PoolSnapshotFiles } from './snapshot-files.js';

let dir = '';
let storage: MemoryStorage;
let files: PoolSnapshotFiles;
const stored: string[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'forkd-snapshot-files-'));
  storage = await MemoryStorage.open(dir);
  const stagingDir = join(dir, 'staging');
  await mkdir(stagingDir, { mode: 0o700 });
  files = new PoolSnapshotFiles({ storage, stagingDir, images: fakeImages, logger: silentLogger, onStored: async (id) => void stored.push(id) });
});
after(async () => {
  await exec('chattr', ['-R', '-f', '-i', dir]).catch(() => {});
  await rm(dir, { recursive: true, force: true });
});

const pending = async (p: Promise<unknown>, ms = 30) => (await Promise.race([p.then(() => 'settled'), new Promise((r) => setTimeout(() => r('pending'), ms))])) === 'pending';

/** A staged draft with a fake checkpoint in it, sealed to be stored later and published. */
async function stagedSnapshot(id: string) {
  const draft = await files.draft(id, true);
  assert.equal(draft.staged, true);
  await mkdir(draft.imagesDir, { recursive: true });
  await writeFile(join(draft.imagesDir, 'fake-pages-1'), 'pages');
  await writeFile(join(draft.imagesDir, 'fake-checkpoint.json'), '{}');
  await storage.create(draft.rootfsKey);
  assert.deepEqual(await draft.seal({ defer: true, previous: undefined }), { memoryBytes: 0, deferred: true });
  await draft.publish();
  return draft.imagesDir;
}

test('a snapshot whose dump is still to come: reading, removing and settling wait for it', async () => {
  let dumped!: () => void;
  files.dumpLater('snap-later', new Promise<void>((r) => (dumped = r)));
  const reads = files.restorable('snap-later');
  const settled = files.settled();
  assert.ok(await pending(reads));
  assert.ok(await pending(settled));
  await stagedSnapshot('snap-later');
  files.storeLater('snap-later', undefined);
  dumped();
  assert.equal(await reads, true, 'whole once dumped and stored');
  await settled;
  assert.ok(stored.includes('snap-later'));
  await files.remove('snap-later');
});

test('a failed store keeps its staging for a restart; removing the snapshot removes that staging too', async () => {
  const staging = await stagedSnapshot('snap-failed');
  // Its memory directory's place taken: the store fails.
  await writeFile(join(files.dir('snap-failed'), 'memory'), 'not a directory');
  files.storeLater('snap-failed', undefined);
  await files.settled();
  await assert.rejects(files.checkRestorable('snap-failed'), /could not be stored/);
  assert.ok(existsSync(staging), 'kept for a restart to retry');
  await files.remove('snap-failed');
  assert.equal(existsSync(staging), false, 'gone with its snapshot');
  assert.equal(existsSync(files.dir('snap-failed')), false);
});

test('drafts marked frozen are found (published ones are not), with their notes', async () => {
  const draft = await files.draft('snap-frozen', false);
  await draft.markFrozen('{"instance":"sbx-x.1234","guestProtocol":3}');
  const other = await files.draft('snap-plain', false);
  assert.deepEqual(await files.frozenDrafts(), [{ snapId: 'snap-frozen', note: '{"instance":"sbx-x.1234","guestProtocol":3}' }]);
  await storage.create(draft.rootfsKey);
  await draft.publish();
  assert.deepEqual(await files.frozenDrafts(), []);
  assert.equal(existsSync(join(files.dir('snap-frozen'), 'frozen-instance')), false, 'the marker does not outlive the draft');
  await other.discard();
  await files.remove('snap-frozen');
});

test('removing a snapshot waits for a later one\'s store that shares its pages (it would fail half-way)', async () => {
  await stagedSnapshot('snap-prev');
  files.storeLater('snap-prev', undefined);
  await files.settled();
  await stagedSnapshot('snap-next');
  files.storeLater('snap-next', 'snap-prev');
  await files.remove('snap-prev');
  assert.ok(stored.includes('snap-next'), 'the store that read its pages was done first');
  await files.checkRestorable('snap-next');
  assert.equal(await files.restorable('snap-next'), true);
  await files.remove('snap-next');
});
