import { randomBytes } from 'node:crypto';
import { ForkdError, TEMPLATE_NAME_PATTERN, type TemplateInfo } from '@forkd/protocol';
import { poolLayout } from '../storage/pool-layout.js';
import type { Storage } from '../storage/storage.js';
import type { Store, TemplateRecord } from '../../store/store.js';

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
    return (await this.#store.listTemplates()).map((t) => ({ name: t.name, createdAt: t.createdAt, warm: !!t.images, ...(t.from ? { from: t.from } : {}) }));
  }

  get(name: string): Promise<TemplateRecord | undefined> {
    return this.#store.getTemplate(name);
  }

  imagesDir(name: string): string {
    return this.#storage.path(poolLayout.templateImages(name));
  }

  /**
   * Publishes a built template: a read-only root volume and, for a warm
   * template, the memory images of its running processes, taken from a
   * finished snapshot, then recorded. Until the record exists the template is
   * invisible (`has` needs it); a rebuild replaces leftovers.
   */
  async publish(name: string, rootfsKey: string, imagesDir: string | undefined, from: string, idmap?: number): Promise<void> {
    if (!TEMPLATE_NAME_PATTERN.test(name)) throw new ForkdError('INVALID_ARGUMENT', `invalid template name: ${name}`);
    await this.remove(name);
    // A read-only subvolume cannot be renamed: snapshot it into place (shares every extent).
    await this.#storage.commit(this.volume(name), rootfsKey, { keepActive: true });
    if (imagesDir) await this.#storage.adoptDir(poolLayout.templateImages(name), imagesDir);
    await this.#store.upsertTemplate({ name, createdAt: new Date().toISOString(), volume: this.volume(name), ...(imagesDir ? { images: poolLayout.templateImages(name), idmap } : {}), from });
  }

  async remove(name: string): Promise<void> {
    await this.#store.deleteTemplate(name);
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
      await this.#store.upsertTemplate({ name, createdAt: new Date().toISOString(), volume: this.volume(name) });
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
  }
}
