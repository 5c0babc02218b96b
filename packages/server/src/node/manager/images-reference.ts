import type { BlobStore } from '../../blob/blob-store.js';
import { newestFirst } from '../../fleet/newest-first.js';
import type { SnapshotRecord } from '../../store/store.js';
import type { ImagesReference } from '../transfer/image-transfer.js';
import { parseManifest, SnapshotManifest, transferKeys } from '../transfer/transfer-manifest.js';
import type { ManagerContext } from './manager-context.js';

/** How many earlier snapshots an export looks through for one exported before it. */
const REFERENCE_LOOKBACK = 8;

/**
 * The images of the sandbox's newest snapshot before `s` that is exported
 * (its manifest lists their chunks) and still restorable on this node. An
 * idle sandbox's pages are the same: an export compares with them instead
 * of hashing (uploadImages), an import copies them instead of fetching
 * (downloadImages). None when there is no such snapshot: everything is
 * hashed or fetched, as it would be anyway.
 */
export async function imagesReference(c: ManagerContext, blobs: BlobStore, s: Pick<SnapshotRecord, 'id' | 'sandboxId' | 'createdAt'>): Promise<ImagesReference | undefined> {
  const older = (await c.store.listSnapshots(s.sandboxId)).filter((o) => o.id !== s.id && o.createdAt <= s.createdAt);
  for (const o of newestFirst(older).slice(0, REFERENCE_LOOKBACK)) {
    const body = await blobs.get(transferKeys.snapshot(o.id));
    const m = body && parseManifest(SnapshotManifest, body);
    // What the store holds under that key must be that snapshot's: anything else is no reference.
    if (!m?.ok || m.value.snapshot.id !== o.id || m.value.sandbox.id !== s.sandboxId) continue;
    try {
      await c.files.checkRestorable(o.id);
    } catch {
      continue;
    }
    return { dir: c.files.memoryDir(o.id), images: m.value.images };
  }
  return undefined;
}
