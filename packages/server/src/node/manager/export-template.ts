import { ForkdError } from '@forkd/protocol';
import type { TemplateExport } from '../../node-contract/node-types.js';
import { uploadImages } from '../transfer/image-transfer.js';
import { MAX_TEMPLATE_DEPTH, type ParentVolume } from '../transfer/template-transfer.js';
import { encodeManifest, transferKeys, type TemplateExportManifest, type TemplateRef } from '../transfer/transfer-manifest.js';
import { isStageName } from '../templates/template-registry.js';
import type { BlobTransfer } from './export-snapshot.js';
import type { ManagerContext } from './manager-context.js';

/**
 * A whole template into the blob store (docs/ARCHITECTURE.md, Templates
 * travel too): its root volume as a snapshot's parent travels (TemplateTransfer:
 * once per send identity, shared with every snapshot that descends from
 * it; incremental against the template it was built from, see exportVolume),
 * its memory images when it is warm, and its record, in a manifest
 * written last under the volume's identity, so one published version is
 * exported once and a rebuild (a new root) is another. A template this node
 * imported keeps the exporter's send identity (a read-only snapshot of a
 * received volume keeps its received UUID): its manifests are there already.
 */
export async function exportTemplate(c: ManagerContext, t: BlobTransfer, name: string): Promise<TemplateExport> {
  const rec = await c.templates.get(name);
  if (!rec || isStageName(name) || !(await c.templates.has(name))) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
  if (name === 'base') throw new ForkdError('FAILED_PRECONDITION', 'the base template is made by forkd setup on every node; it is not exported');
  const vol = await exportVolume(c, t, name, 0);
  const key = transferKeys.templateExport(name, vol.ref.uuid);
  if (await t.blobs.has(key)) return { manifest: key, bytesUploaded: vol.bytesUploaded };
  const images = rec.images ? await uploadImages(t.blobs, c.storage.path(rec.images), undefined, c.logger) : { images: [], bytesUploaded: 0 };
  const m: TemplateExportManifest = {
    kind: 'forkd-template-export',
    version: 1,
    template: vol.ref,
    createdAt: rec.createdAt,
    ...(rec.from ? { from: rec.from } : {}),
    ...(rec.image ? { image: rec.image } : {}),
    images: images.images,
    exportedAt: new Date().toISOString(),
  };
  const body = encodeManifest(m);
  await t.blobs.put(key, body);
  const bytesUploaded = vol.bytesUploaded + images.bytesUploaded + body.length;
  c.logger.info('template exported', { template: name, id: rec.id, manifest: key, warm: !!rec.images, bytesUploaded });
  return { manifest: key, bytesUploaded };
}

/**
 * A template's root volume in the store, incremental against the template
 * it was built from while this node holds that (exported first, the same
 * way): a template built from `base` costs its own changes once the store
 * has this node's `base`. Any parent gives a correct stream (`btrfs send`
 * compares the two trees); one the template was snapshotted from gives a
 * small one. A chain longer than MAX_TEMPLATE_DEPTH (rebuilds can make
 * `from` loop) ends in a full stream.
 */
export async function exportVolume(c: ManagerContext, t: BlobTransfer, name: string, depth: number): Promise<{ ref: TemplateRef; bytesUploaded: number }> {
  const rec = await c.templates.get(name);
  if (!rec) throw new ForkdError('NOT_FOUND', `template ${name} not found`);
  const from = rec.from;
  const parentOf = async (): Promise<{ parent: ParentVolume; bytesUploaded: number } | undefined> => {
    if (from === undefined || from === name || depth + 1 >= MAX_TEMPLATE_DEPTH || isStageName(from) || !(await c.templates.has(from))) return undefined;
    const p = await exportVolume(c, t, from, depth + 1);
    return { parent: { key: c.templates.volume(from), ref: p.ref }, bytesUploaded: p.bytesUploaded };
  };
  return t.templates.export(c.templates.volume(name), name, rec.id, parentOf);
}
