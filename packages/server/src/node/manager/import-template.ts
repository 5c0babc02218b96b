import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import { dirname } from 'node:path';
import { ForkdError, type TemplateInfo } from '@forkd/protocol';
import { poolLayout } from '../storage/pool-layout.js';
import { downloadImages } from '../transfer/image-transfer.js';
import { sendIdentity, subvolumeIdentity } from '../transfer/subvolume-identity.js';
import { manifestOrThrow, TemplateExportManifest } from '../transfer/transfer-manifest.js';
import { infoOf } from '../templates/template-builder.js';
import { isStageName } from '../templates/template-registry.js';
import type { BlobTransfer } from './export-snapshot.js';
import type { ManagerContext } from './manager-context.js';

/**
 * A template exported by any node of the same blob store (exportTemplate),
 * published here as if it had been built here: the same name, id and
 * creation time, its root a read-only snapshot of the received volume (so
 * it keeps the exporter's send identity: snapshots of its sandboxes export
 * incrementally against the copy the store holds), its warm images checked
 * and complete, its image defaults. The version this node has already
 * (same id, same root identity) makes it a no-op; the same id with another
 * root is a rebuild exported since, which replaces it as a rebuild would;
 * another template of the name is ALREADY_EXISTS. Single-flight per name
 * on the node (`inFlight`); anything that fails leaves no record, and only
 * what the next start's sweeps remove.
 */
export async function importTemplate(c: ManagerContext, t: BlobTransfer, manifestKey: string, inFlight: Map<string, Promise<TemplateInfo>>): Promise<TemplateInfo> {
  const m = manifestOrThrow(TemplateExportManifest, manifestKey, await t.blobs.get(manifestKey));
  const name = m.template.name;
  let p = inFlight.get(name);
  if (!p) {
    p = importOnce(c, t, m).finally(() => inFlight.delete(name));
    inFlight.set(name, p);
  }
  const info = await p;
  // A concurrent import of another template of the name: that one is what is here now.
  if (info.id !== m.template.id) throw new ForkdError('ALREADY_EXISTS', `another template named ${name} (${info.id}) is on this node`);
  return info;
}

async function importOnce(c: ManagerContext, t: BlobTransfer, m: TemplateExportManifest): Promise<TemplateInfo> {
  const name = m.template.name;
  if (name === 'base' || isStageName(name)) throw new ForkdError('FAILED_PRECONDITION', `template ${name} is made on every node by forkd itself; it is not imported`);
  const have = (await c.templates.has(name)) ? await c.templates.get(name) : undefined;
  if (have && have.id !== m.template.id) throw new ForkdError('ALREADY_EXISTS', `another template named ${name} (${have.id}) is on this node`);
  if (have && (await identityOf(c, c.templates.volume(name))) === m.template.uuid) return infoOf(c.templates, name);
  c.space.checkFree('import a template');
  const t0 = performance.now();
  const received = await t.templates.parentFor(m.template);
  const draft = m.images.length > 0 ? poolLayout.templateImagesDraft(name, randomBytes(4).toString('hex')) : undefined;
  try {
    let idmap: number | undefined;
    if (draft) {
      const dir = c.storage.path(draft);
      await mkdir(dirname(dir), { recursive: true, mode: 0o700 });
      await downloadImages(t.blobs, m.images, dir);
      if (!(await c.runtime.images.complete(dir))) throw new ForkdError('INVALID_ARGUMENT', `the images of template ${name} are not a whole checkpoint`);
      // The range the images were dumped with is the one their restores recreate (as a build records it).
      idmap = (await c.runtime.images.idmap(dir))?.hostId;
    }
    await c.templates.publish(name, {
      rootfsKey: received,
      imagesDir: draft && c.storage.path(draft),
      from: m.from,
      idmap,
      image: m.image,
      imported: { id: m.template.id, createdAt: m.createdAt },
    });
  } catch (err) {
    if (draft) await c.storage.removeDir(draft).catch(() => {});
    throw err;
  }
  c.logger.info('template imported', { template: name, id: m.template.id, uuid: m.template.uuid, warm: !!draft, ms: Math.round(performance.now() - t0) });
  return infoOf(c.templates, name);
}

async function identityOf(c: ManagerContext, key: string): Promise<string | undefined> {
  const ident = await subvolumeIdentity(c.storage.path(key));
  return ident && sendIdentity(ident);
}
