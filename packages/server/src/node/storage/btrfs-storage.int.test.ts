import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before } from 'node:test';
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
  { frozenCommit: true, skip },
);
