import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from '../../blob/blob-store.js';
import { writeChunked } from '../../blob/chunked.js';
import type { SnapshotExport } from '../../node-contract/node-types.js';
import type { SandboxRecord, SnapshotRecord } from '../../store/store.js';
import { span } from '../../shared/profile.js';
import { sendStream } from '../transfer/btrfs-stream.js';
import { bothOrThrow } from '../transfer/both-or-throw.js';
import { uploadImages } from '../transfer/image-transfer.js';
import { imagesReference } from './images-reference.js';
import { exportVolume } from './export-template.js';
import type { TemplateTransfer } from '../transfer/template-transfer.js';
import { encodeManifest, transferKeys, type SnapshotManifest, type TemplateRef } from '../transfer/transfer-manifest.js';
import type { ManagerContext } from './manager-context.js';
import { underOwnerOf } from './snapshot-ops.js';

/** A node's way to its blob store (ManagerDeps.blobs) and the templates it sends and receives there. */
export interface BlobTransfer {
  blobs: BlobStore;
  templates: TemplateTransfer;
}

/**
 * A snapshot into the blob store (docs/ARCHITECTURE.md, Snapshot transfer):
 * its root as a send stream incremental against its template (exported
 * first if the store lacks it), its memory images, its record and its
 * sandbox's, in a manifest written last. Everything goes through chunks
 * the store may hold already, so a retry after a failure, or the export of
 * a later snapshot of an idle sandbox, uploads only what is new. An
 * exported snapshot (its manifest is there) is not exported again. Under
 * the owner's lock: the snapshot is not deleted while it is read.
 */
export function exportSnapshot(c: ManagerContext, t: BlobTransfer, snapId: string): Promise<SnapshotExport> {
  return underOwnerOf(c, snapId, async () => {
    const s = await c.snapshotRecord(snapId);
    const r = await c.store.getSandbox(s.sandboxId);
    if (!r) throw new ForkdError('FAILED_PRECONDITION', `snapshot ${snapId} belongs to sandbox ${s.sandboxId}, which is not on this node`);
    const key = transferKeys.snapshot(snapId);
    if (await t.blobs.has(key)) return { manifest: key, bytesUploaded: 0 };
    await c.files.checkRestorable(snapId);
    const t0 = performance.now();
    const base = await baseOf(c, r);
    // Its own template goes incremental against the one it was built from (exportVolume); a received one is in the store already.
    const tpl = base ? await (r.base ? t.templates.export(base.key, base.name, base.id) : exportVolume(c, t, base.name, 0)) : undefined;
    // At once: one is mostly btrfs and the disk, the other hashing here; both wait on the store's writes.
    const [rootfs, images] = await bothOrThrow(
      span('export: root stream', () => writeChunked(t.blobs, sendStream(c.storage.path(c.files.rootfsKey(snapId)), base ? c.storage.path(base.key) : undefined), { concurrency: 8 })),
      span('export: memory images', async () => uploadImages(t.blobs, c.files.memoryDir(snapId), await imagesReference(c, t.blobs, s), c.logger)),
    );
    const body = encodeManifest(manifestOf(s, r, tpl?.ref, rootfs.object, images.images));
    await t.blobs.put(key, body);
    const bytesUploaded = (tpl?.bytesUploaded ?? 0) + rootfs.bytesUploaded + images.bytesUploaded + body.length;
    c.logger.info('snapshot exported', { snapshot: snapId, sandbox: r.id, manifest: key, bytesUploaded, rootfsBytes: rootfs.object.size, ms: Math.round(performance.now() - t0) });
    return { manifest: key, bytesUploaded };
  });
}

/**
 * The read-only volume the sandbox's root descends from, if it is still
 * there: a received template (SandboxRecord.base) or its own template while
 * that is still the one published under its name. None: a full stream.
 */
async function baseOf(c: ManagerContext, r: SandboxRecord): Promise<{ key: string; name: string; id: string } | undefined> {
  const key = r.base ?? (await c.templates.volumeOf(r.template, r.templateId));
  if (!key || !(await c.storage.exists(key))) return undefined;
  return { key, name: r.template, id: r.templateId };
}

function manifestOf(s: SnapshotRecord, r: SandboxRecord, template: TemplateRef | undefined, rootfs: SnapshotManifest['rootfs'], images: SnapshotManifest['images']): SnapshotManifest {
  return {
    kind: 'forkd-snapshot',
    version: 1,
    snapshot: { id: s.id, ...(s.name ? { name: s.name } : {}), createdAt: s.createdAt, frozenMs: s.frozenMs, sizeBytes: s.sizeBytes, pinned: s.pinned, reason: s.reason },
    sandbox: {
      id: r.id,
      template: r.template,
      templateId: r.templateId,
      limits: r.limits,
      env: r.env,
      metadata: r.metadata,
      createdAt: r.createdAt,
      ...(r.forkedFrom ? { forkedFrom: r.forkedFrom } : {}),
      ...(r.policy ? { policy: r.policy } : {}),
      ...(r.idmap !== undefined ? { idmap: r.idmap } : {}),
      ...(r.network ? { network: r.network } : {}),
      ...(r.defaults ? { defaults: r.defaults } : {}),
    },
    template: template ?? null,
    rootfs,
    images,
    exportedAt: new Date().toISOString(),
  };
}
