import { randomBytes } from 'node:crypto';
import { mkdir, readdir, rename } from 'node:fs/promises';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from '../../blob/blob-store.js';
import { readChunked, writeChunked } from '../../blob/chunked.js';
import type { Logger } from '../../shared/logger.js';
import { poolLayout } from '../storage/pool-layout.js';
import type { Storage } from '../storage/storage.js';
import { receiveStream, sendStream } from './btrfs-stream.js';
import { removeReceived } from './received-dir.js';
import { sendIdentity, subvolumeIdentity } from './subvolume-identity.js';
import { encodeManifest, manifestOrThrow, TemplateManifest, transferKeys, type TemplateRef } from './transfer-manifest.js';

/** How long a chain of parents may be (a template built from one built from ... base); a store that says more is not trusted. */
export const MAX_TEMPLATE_DEPTH = 8;

/** A local read-only template volume a stream is incremental against, and its reference in the store. */
export interface ParentVolume {
  key: string;
  ref: TemplateRef;
}

/**
 * Templates as the parents of incremental snapshot streams. `btrfs receive`
 * applies such a stream only onto a volume whose (received) UUID is the one
 * the sender's template had, so a template travels by send/receive too:
 * exported once, whole, under its send identity; received on a node that
 * has no volume of that identity into `template-parents/<uuid>/<name>`.
 * A node that built the same template itself has another UUID: its own copy
 * is not the parent (the bytes could differ), the received one is. A
 * template built from another is sent incremental against that one's
 * volume when the caller names it (`parent`), which is then received first.
 */
export class TemplateTransfer {
  readonly #storage: Storage;
  readonly #blobs: BlobStore;
  readonly #logger: Logger;
  /** Receives in progress, by uuid: two imports needing one template receive it once. */
  readonly #receiving = new Map<string, Promise<string>>();

  constructor(storage: Storage, blobs: BlobStore, logger: Logger) {
    this.#storage = storage;
    this.#blobs = blobs;
    this.#logger = logger;
  }

  /**
   * The template volume `key` in the store (uploaded once per identity): a
   * full stream, or incremental against what `parentOf` gives (asked only
   * when the store lacks this volume: it exports that parent first).
   */
  async export(key: string, name: string, id: string, parentOf?: () => Promise<{ parent: ParentVolume; bytesUploaded: number } | undefined>): Promise<{ ref: TemplateRef; bytesUploaded: number }> {
    const ident = await subvolumeIdentity(this.#storage.path(key));
    if (!ident?.readOnly) throw new ForkdError('INTERNAL', `template volume ${key} is not a read-only subvolume`);
    const uuid = sendIdentity(ident);
    const manifest = transferKeys.template(name, uuid);
    const ref: TemplateRef = { name, id, uuid, manifest };
    if (await this.#blobs.has(manifest)) return { ref, bytesUploaded: 0 };
    const p = await parentOf?.();
    const parent = p?.parent;
    const up = await writeChunked(this.#blobs, sendStream(this.#storage.path(key), parent && this.#storage.path(parent.key)));
    const body = encodeManifest({ kind: 'forkd-template', version: 1, name, uuid, ...(parent ? { parent: parent.ref } : {}), rootfs: up.object, exportedAt: new Date().toISOString() });
    await this.#blobs.put(manifest, body);
    this.#logger.info('template exported', { template: name, uuid, bytesUploaded: up.bytesUploaded });
    return { ref, bytesUploaded: (p?.bytesUploaded ?? 0) + up.bytesUploaded + body.length };
  }

  /**
   * A local read-only volume with the template's send identity: one of this
   * node's templates, a received one, or received now (its own parents
   * first). `below`: the identities whose receive waits for this one, so a
   * store whose parents loop is refused instead of waiting on itself.
   */
  async parentFor(ref: TemplateRef, below: readonly string[] = []): Promise<string> {
    if (below.includes(ref.uuid) || below.length >= MAX_TEMPLATE_DEPTH) throw new ForkdError('INVALID_ARGUMENT', `the parents of template ${ref.name} ${ref.uuid} loop or go deeper than ${MAX_TEMPLATE_DEPTH}`);
    const found = await this.#find(ref);
    if (found) return found;
    let p = this.#receiving.get(ref.uuid);
    if (!p) {
      p = this.#receive(ref, [...below, ref.uuid]).finally(() => this.#receiving.delete(ref.uuid));
      this.#receiving.set(ref.uuid, p);
    }
    return p;
  }

  async #find(ref: TemplateRef): Promise<string | undefined> {
    const received = poolLayout.templateParent(ref.uuid, ref.name);
    const candidates = [received, ...(await this.#storage.list(poolLayout.templates)).filter((k) => !poolLayout.isDraft(k))];
    for (const key of candidates) {
      const ident = await subvolumeIdentity(this.#storage.path(key));
      if (ident?.readOnly && sendIdentity(ident) === ref.uuid) return key;
    }
    return undefined;
  }

  async #receive(ref: TemplateRef, below: readonly string[]): Promise<string> {
    const m = manifestOrThrow(TemplateManifest, ref.manifest, await this.#blobs.get(ref.manifest));
    if (m.uuid !== ref.uuid || m.name !== ref.name) throw new ForkdError('INVALID_ARGUMENT', `${ref.manifest} is the manifest of template ${m.name} ${m.uuid}, not of ${ref.name} ${ref.uuid}`);
    // `btrfs receive` finds the parent by its identity wherever it is in the pool.
    if (m.parent) await this.parentFor(m.parent, below);
    const tmpKey = `${poolLayout.templateParents}/.tmp-${ref.uuid}-${randomBytes(4).toString('hex')}`;
    const tmp = this.#storage.path(tmpKey);
    await mkdir(tmp, { recursive: true, mode: 0o700 });
    try {
      await receiveStream(tmp, readChunked(this.#blobs, m.rootfs));
      const entries = await readdir(tmp);
      const ident = entries.length === 1 && entries[0] === ref.name ? await subvolumeIdentity(this.#storage.path(`${tmpKey}/${ref.name}`)) : undefined;
      if (!ident?.readOnly || ident.receivedUuid !== ref.uuid) throw new ForkdError('INVALID_ARGUMENT', `the stream of template ${ref.name} (${ref.manifest}) did not make its read-only volume ${ref.uuid}`);
      await rename(tmp, this.#storage.path(poolLayout.templateParentDir(ref.uuid)));
    } catch (err) {
      await removeReceived(tmp).catch((e: unknown) => this.#logger.warn('could not remove a half-received template', { path: tmp, error: String(e) }));
      throw err;
    }
    this.#logger.info('template received as a snapshot parent', { template: ref.name, uuid: ref.uuid });
    return poolLayout.templateParent(ref.uuid, ref.name);
  }

  /**
   * At start: half-received templates (a crash mid-receive) go, and so do
   * received ones no sandbox descends from any more (`bases`: every
   * SandboxRecord.base). Nothing needs those: snapshots share their extents
   * but not their lifetime, and a later import receives them again.
   */
  async sweep(bases: ReadonlySet<string>): Promise<void> {
    for (const key of await this.#storage.list(poolLayout.templateParents)) {
      if (!poolLayout.isDraft(key) && [...bases].some((b) => b.startsWith(`${key}/`))) continue;
      await removeReceived(this.#storage.path(key)).catch((err: unknown) => this.#logger.warn('could not remove a received template', { key, error: String(err) }));
      if (!poolLayout.isDraft(key)) this.#logger.info('received template removed: no sandbox descends from it', { key });
    }
  }
}
