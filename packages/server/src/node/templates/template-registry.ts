import { randomBytes } from 'node:crypto';
import { exec } from '../../shared/exec.js';
import { ForkdError, newTemplateId, TEMPLATE_NAME_PATTERN, type TemplateInfo } from '@forkd/protocol';
import { poolLayout } from '../storage/pool-layout.js';
import type { Storage } from '../storage/storage.js';
import type { Store, TemplateImage, TemplateRecord } from '../../store/store.js';

/** What a built template is published from. */
export interface PublishSource {
  /** Storage key of the read-only root it is a snapshot of. */
  rootfsKey: string;
  /** A warm template's memory images (a host directory, moved into the pool). */
  imagesDir?: string | undefined;
  /** What it was built from: a template's name, or an image reference. */
  from: string | undefined;
  idmap?: number | undefined;
  image?: TemplateImage | undefined;
  /** An imported template: the id and creation time it has on every node. */
  imported?: { id: string; createdAt: string } | undefined;
}

/**
 * Templates a build makes for its own build sandbox (an image's root, see
 * image-template.ts): never listed, never reachable through the node
 * contract (LocalNode.create refuses them), removed after the build and at
 * start. No tenant can name one: BuildTemplateRequest reserves the prefix.
 */
export const STAGE_PREFIX = 'forkd-stage-';
export const isStageName = (name: string): boolean => name.startsWith(STAGE_PREFIX);

/**
 * Templates are read-only volumes `templates/<name>`; a sandbox root is a
 * writable snapshot of one. A template is published by renaming a finished
 * volume into place, so a crash mid-import leaves only a `.tmp-*` volume that
 * the next start removes.
 */
export class TemplateRegistry {
  readonly #storage: Storage;
  readonly #store: Store;

  constructor(storage: Storage, store: Store) {
    this.#storage = storage;
    this.#store = store;
  }

  volume(name: string): string {
    return poolLayout.template(name);
  }

  async has(name: string): Promise<boolean> {
    return (await this.#store.getTemplate(name)) !== undefined && (await this.#storage.exists(this.volume(name)));
  }

  async list(): Promise<TemplateInfo[]> {
    return (await this.#store.listTemplates()).filter((t) => !isStageName(t.name)).map((t) => ({ name: t.name, id: t.id, createdAt: t.createdAt, warm: !!t.images, ...(t.from ? { from: t.from } : {}) }));
  }

  get(name: string): Promise<TemplateRecord | undefined> {
    return this.#store.getTemplate(name);
  }

  /**
   * The volume of the template a sandbox was made from, while that template
   * is still the one published under its name; undefined once it was deleted
   * (a later template of the name is another one: its bytes are not this
   * sandbox's base).
   */
  async volumeOf(name: string, id: string): Promise<string | undefined> {
    return (await this.#store.getTemplate(name))?.id === id ? this.volume(name) : undefined;
  }

  imagesDir(name: string): string {
    return this.#storage.path(poolLayout.templateImages(name));
  }

  /**
   * Publishes a built template: a read-only root volume and, for a warm
   * template, the memory images of its running processes, taken from a
   * finished snapshot, then recorded. Until the record exists the template is
   * invisible (`has` needs it); a rebuild replaces leftovers and keeps the
   * template's id (its policy and default network stay with it).
   */
  async publish(name: string, src: PublishSource): Promise<void> {
    if (!TEMPLATE_NAME_PATTERN.test(name)) throw new ForkdError('INVALID_ARGUMENT', `invalid template name: ${name}`);
    const id = src.imported?.id ?? (await this.#store.getTemplate(name))?.id ?? newTemplateId();
    // The record stays (`has` also needs the volume): a crash here still keeps the id for the next rebuild.
    await this.#removeFiles(name);
    // A read-only subvolume cannot be renamed: snapshot it into place (shares every extent).
    await this.#storage.commit(this.volume(name), src.rootfsKey, { keepActive: true });
    if (src.imagesDir) await this.#storage.adoptDir(poolLayout.templateImages(name), src.imagesDir);
    await this.#store.upsertTemplate({
      id,
      name,
      createdAt: src.imported?.createdAt ?? new Date().toISOString(),
      volume: this.volume(name),
      ...(src.imagesDir ? { images: poolLayout.templateImages(name), idmap: src.idmap } : {}),
      ...(src.from ? { from: src.from } : {}),
      ...(src.image ? { image: src.image } : {}),
    });
  }

  /**
   * `src` as it is (root, warm memory images, defaults) published as `dst`,
   * as `docker tag` names an image again: the root shares every extent, the
   * images are reflinked. The copy is a template of its own from then on.
   */
  async copy(src: string, dst: string): Promise<void> {
    const rec = await this.#store.getTemplate(src);
    if (!rec || !(await this.has(src))) throw new ForkdError('NOT_FOUND', `template ${src} not found`);
    // A draft beside the destination (same filesystem, so adoptDir renames it); a crash leaves it to sweep().
    const draft = rec.images ? poolLayout.templateImagesDraft(dst, randomBytes(4).toString('hex')) : undefined;
    try {
      if (draft) await exec('cp', ['-a', '--reflink=auto', '--', this.imagesDir(src), this.#storage.path(draft)]);
      await this.publish(dst, { rootfsKey: this.volume(src), imagesDir: draft && this.#storage.path(draft), from: rec.from, idmap: rec.idmap, image: rec.image });
    } catch (err) {
      if (draft) await this.#storage.removeDir(draft).catch(() => {});
      throw err;
    }
  }

  /** A cold template of a build's own (see STAGE_PREFIX) on a read-only root; returns its name. */
  async stage(rootfsKey: string, image: TemplateImage): Promise<string> {
    const name = `${STAGE_PREFIX}${randomBytes(8).toString('hex')}`;
    await this.#storage.commit(this.volume(name), rootfsKey, { keepActive: true });
    await this.#store.upsertTemplate({ id: name, name, createdAt: new Date().toISOString(), volume: this.volume(name), from: image.ref, image });
    return name;
  }

  async remove(name: string): Promise<void> {
    await this.#store.deleteTemplate(name);
    await this.#removeFiles(name);
  }

  async #removeFiles(name: string): Promise<void> {
    await this.#storage.remove(this.volume(name));
    await this.#storage.removeDir(poolLayout.templateImages(name));
  }

  /** Copies a root filesystem directory into a new read-only template volume. */
  async importDir(name: string, sourceDir: string): Promise<void> {
    if (!TEMPLATE_NAME_PATTERN.test(name)) throw new ForkdError('INVALID_ARGUMENT', `invalid template name: ${name}`);
    const tmp = poolLayout.templateDraft(name, randomBytes(4).toString('hex'));
    try {
      await this.#storage.importTree(tmp, sourceDir);
      await this.#storage.remove(this.volume(name));
      await this.#storage.rename(tmp, this.volume(name));
      // `base` (the only import, by forkd setup) has a fixed id: it is never deleted nor built by a tenant.
      await this.#store.upsertTemplate({ id: (await this.#store.getTemplate(name))?.id ?? (name === 'base' ? 'base' : newTemplateId()), name, createdAt: new Date().toISOString(), volume: this.volume(name) });
    } catch (err) {
      await this.#storage.remove(tmp).catch(() => {});
      throw err;
    }
  }

  /** Removes half-made imports left by a crash. */
  async sweep(): Promise<void> {
    for (const key of await this.#storage.list(poolLayout.templates)) {
      if (poolLayout.isDraft(key)) await this.#storage.remove(key);
    }
    // A template import's images on their way in (see import-template.ts).
    for (const key of await this.#storage.list(poolLayout.templateImagesDir)) if (poolLayout.isDraft(key)) await this.#storage.removeDir(key);
    for (const t of await this.#store.listTemplates()) if (isStageName(t.name)) await this.remove(t.name);
  }
}
