import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { FILE_METADATA_LIMITS } from '@forkd/protocol';
import { exec } from '../../shared/exec.js';
import { AGENT, startLocalAgent } from '../../testing/local-agent.js';
import { isRoot } from '../../testing/test-node.js';
import { ensurePool, unmountPool, type PoolOptions } from './btrfs-pool.js';
import { BtrfsStorage } from './btrfs-storage.js';
import { storageConformance } from './storage-conformance.js';

/** BtrfsStorage against the Storage contract, on a private loop-backed pool (a 512 MiB sparse image) removed afterwards. */
const skip = !isRoot && 'needs root (mounts a loop-backed Btrfs pool)';
let dir: string;
let pool: PoolOptions;
let roots = 0;

before(async () => {
  if (skip) return;
  dir = await mkdtemp(join(tmpdir(), 'forkd-btrfs-storage-'));
  pool = { mountPoint: join(dir, 'pool'), image: join(dir, 'pool.img'), sizeBytes: 512 * 2 ** 20 };
  await ensurePool(pool);
});

after(async () => {
  if (skip || !dir) return;
  await unmountPool(pool);
  await rm(dir, { recursive: true, force: true });
});

// Each test gets its own directory of the pool as root; what it leaves goes with the pool.
storageConformance(
  'BtrfsStorage',
  async () => {
    const root = join(pool.mountPoint, `t-${roots++}`);
    await mkdir(root);
    return { storage: new BtrfsStorage(root), close: async () => {} };
  },
  { frozenCommit: true, provesUnchanged: true, skip },
);

test('a pool forkd makes has 8 KiB tree nodes and one copy of its metadata, and takes the largest file metadata value', { skip: skip || (!existsSync(AGENT) && 'guest agent not built') }, async () => {
  // See POOL_MKFS_OPTIONS: 16 KiB nodes make creates slow down with the number of sandboxes, 4 KiB ones refuse this value.
  assert.match((await exec('btrfs', ['inspect-internal', 'dump-super', pool.image!])).stdout, /^nodesize\s+8192$/m);
  assert.match((await exec('btrfs', ['filesystem', 'df', pool.mountPoint])).stdout, /^Metadata, single:/m);
  const agent = await startLocalAgent('xattr-', [], pool.mountPoint);
  try {
    const value = 'v'.repeat(FILE_METADATA_LIMITS.maxTotalBytes - 'user.e2b.big'.length);
    await agent.guest.writeFile(join(agent.dir, 'f'), Buffer.from('x'), { metadata: { 'e2b.big': value } });
    assert.equal((await agent.guest.stat(join(agent.dir, 'f'))).metadata?.['e2b.big'], value);
  } finally {
    await agent.stop();
  }
});

/** Subvolumes of the pool (deleted ones are not listed). */
async function subvolumeCount(): Promise<number> {
  return (await exec('btrfs', ['subvolume', 'list', pool.mountPoint])).stdout.split('\n').filter((l) => l.startsWith('ID ')).length;
}

test('BtrfsStorage.remove deletes subvolumes a sandbox nested in its root: any depth, any name, read-only too, by id, following no link', { skip }, async () => {
  const root = join(pool.mountPoint, `t-${roots++}`);
  await mkdir(root);
  const s = new BtrfsStorage(root);
  const a = await s.create('sandboxes/a');
  const b = await s.create('sandboxes/b');
  await writeFile(join(b, 'kept'), 'b');
  const count = await subvolumeCount();
  // Made from the host, as a pool from before seccomp refused BTRFS_IOC_SUBVOL_CREATE may hold them;
  // the names would trip a parser of `btrfs subvolume list`, the links a delete by path.
  await exec('btrfs', ['subvolume', 'create', join(a, 'nested')]);
  await writeFile(join(a, 'nested', 'data'), randomBytes(2 ** 20));
  await exec('btrfs', ['subvolume', 'create', join(a, 'nested', 'two\nID 257 gen 1 top level 5 path b')]);
  await exec('btrfs', ['subvolume', 'snapshot', '-r', join(a, 'nested'), join(a, 'read-only snapshot')]);
  await symlink(b, join(a, 'nested', 'to-b'));
  await symlink(b, join(a, 'to-b'));
  await assert.rejects(exec('btrfs', ['subvolume', 'delete', a]), /Directory not empty/, 'what a delete met before');
  await s.remove('sandboxes/a');
  assert.equal(await s.exists('sandboxes/a'), false);
  assert.equal(await subvolumeCount(), count - 1, 'the root and all it held are gone, nothing else');
  assert.equal(await readFile(join(b, 'kept'), 'utf8'), 'b');
});
