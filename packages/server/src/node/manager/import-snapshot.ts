import { dirname } from 'node:path';
import { readdir } from 'node:fs/promises';
import { ForkdError, type SnapshotInfo } from '@forkd/protocol';
import { readChunked } from '../../blob/chunked.js';
import type { ImportSnapshotOptions } from '../../node-contract/node-types.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import type { SnapshotDraft } from '../storage/snapshot-files.js';
import { receiveStream } from '../transfer/btrfs-stream.js';
import { downloadImages } from '../transfer/image-transfer.js';
import { removeReceived } from '../transfer/received-dir.js';
import { subvolumeIdentity } from '../transfer/subvolume-identity.js';
import { span } from '../../shared/profile.js';
import { manifestBytes, manifestOrThrow, SnapshotManifest } from '../transfer/transfer-manifest.js';
import type { BlobTransfer } from './export-snapshot.js';
import { imagesReference } from './images-reference.js';
import type { ManagerContext } from './manager-context.js';
import { toSnapshotInfo } from './sandbox-info.js';

/**
 * A snapshot from the blob store into this node (docs/ARCHITECTURE.md,
 * Snapshot transfer): its template received first if no volume here has its
 * identity, its root received as the read-only `rootfs` of a snapshot draft,
 * its images written and checked, then published and recorded; with
 * `asSandbox` its sandbox is recorded under the same id, paused on it, so a
 * resume restores it as a fork or restore would (root volume, quota group,
 * the images' id range). Everything is verified against the manifest's
 * checksums as it is read; anything that fails leaves no volume, directory
 * or record behind. Under the sandbox's lock.
 */
export async function importSnapshot(c: ManagerContext, t: BlobTransfer, manifestKey: string, opts: ImportSnapshotOptions = {}): Promise<SnapshotInfo> {
  const m = manifestOrThrow(SnapshotManifest, manifestKey, await t.blobs.get(manifestKey));
  return c.locks.exclusive(m.sandbox.id, () => importLocked(c, t, m, !!opts.asSandbox));
}

async function importLocked(c: ManagerContext, t: BlobTransfer, m: SnapshotManifest, asSandbox: boolean): Promise<SnapshotInfo> {
  const snapId = m.snapshot.id;
  if (await c.store.getSnapshot(snapId)) throw new ForkdError('ALREADY_EXISTS', `snapshot ${snapId} is already on this node`);
  if (asSandbox && (await c.store.getSandbox(m.sandbox.id))) throw new ForkdError('ALREADY_EXISTS', `sandbox ${m.sandbox.id} is already on this node`);
  const space = c.space.checkFree('import a snapshot');
  const need = manifestBytes(m);
  if (space.sizeBytes > 0 && need > space.freeBytes) throw new ForkdError('RESOURCE_EXHAUSTED', `snapshot ${snapId} needs up to ${Math.ceil(need / 2 ** 20)} MB and the storage pool has ${Math.floor(space.freeBytes / 2 ** 20)} MB free`, { limit: 'FORKD_POOL_MIN_FREE_MB' });
  const t0 = performance.now();
  const parent = m.template ? await t.templates.parentFor(m.template) : undefined;
  const draft = await c.files.draft(snapId, false);
  let memoryBytes: number;
  try {
    memoryBytes = await receiveDraft(c, t, m, draft);
    await draft.publish();
  } catch (err) {
    await removeReceived(dirname(c.storage.path(draft.rootfsKey))).catch(() => {});
    await draft.discard();
    throw err;
  }
  const rec: SnapshotRecord = { ...m.snapshot, sandboxId: m.sandbox.id, sizeBytes: memoryBytes };
  try {
    await c.store.insertSnapshot(rec);
    if (asSandbox) await c.store.insertSandbox(await sandboxOf(c, m, parent));
  } catch (err) {
    await c.store.deleteSnapshot(snapId).catch(() => {});
    await c.files.remove(snapId).catch(() => {});
    throw err;
  }
  c.logger.info('snapshot imported', { snapshot: snapId, sandbox: m.sandbox.id, asSandbox, parent, ms: Math.round(performance.now() - t0) });
  return toSnapshotInfo(rec);
}

/** Root and images into the draft, each checked; resolves with the images' bytes. */
async function receiveDraft(c: ManagerContext, t: BlobTransfer, m: SnapshotManifest, draft: SnapshotDraft): Promise<number> {
  const root = c.storage.path(draft.rootfsKey);
  const dir = dirname(root);
  await span('import: root stream', () => receiveStream(dir, readChunked(t.blobs, m.rootfs)));
  // The stream names its volume: only the sender's `rootfs`, read-only and received, is one.
  const entries = await readdir(dir);
  const ident = entries.length === 1 && entries[0] === 'rootfs' ? await subvolumeIdentity(root) : undefined;
  if (!ident?.readOnly || !ident.receivedUuid) throw new ForkdError('INVALID_ARGUMENT', `the root stream of snapshot ${m.snapshot.id} did not make its read-only volume rootfs`);
  const ref = await imagesReference(c, t.blobs, { id: m.snapshot.id, sandboxId: m.sandbox.id, createdAt: m.snapshot.createdAt });
  const bytes = await span('import: memory images', () => downloadImages(t.blobs, m.images, draft.imagesDir, ref));
  if (!(await c.runtime.images.complete(draft.imagesDir))) throw new ForkdError('INVALID_ARGUMENT', `the images of snapshot ${m.snapshot.id} are not a whole checkpoint`);
  return bytes;
}

/**
 * The sandbox as its manifest describes it, paused on the imported snapshot.
 * Its root descends from `parent`: recorded as its base unless that is its
 * own template here (an import into the node it came from).
 */
async function sandboxOf(c: ManagerContext, m: SnapshotManifest, parent: string | undefined): Promise<SandboxRecord> {
  const s = m.sandbox;
  const own = await c.templates.volumeOf(s.template, s.templateId);
  return {
    ...s,
    state: 'paused',
    resumeFrom: m.snapshot.id,
    ...(parent && parent !== own ? { base: parent } : {}),
  };
}
