import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { poolLayout } from '../storage/pool-layout.js';
import type { Storage } from '../storage/storage.js';
import { layerPathParts, resolveDirInScope } from '../images/scoped-path.js';
import { VolumeUse, type PrunableCache } from '../storage/volume-use.js';

/** Bumped when what a step does for the same inputs changes: older cached steps are then never matched. */
const KEY_VERSION = 'forkd-step-v1';

/**
 * A step's cache key: its parent's key, the step after substitution, and
 * for COPY a digest of the files it copies. Equal keys are equal trees.
 */
export function stepKey(parent: string, material: string, files = ''): string {
  return createHash('sha256').update(`${KEY_VERSION}\0${parent}\0${material}\0${files}`).digest('hex');
}

/**
 * Dockerfile steps' results as read-only volumes `build-steps/<key>`, each
 * a snapshot of its parent step's (extents shared). A step is written on a
 * `.tmp-*` draft and committed under its key in one snapshot, so a crash
 * leaves a draft (swept at start) and never a half-made step; two builds
 * making the same step at once both succeed, and one volume stays. Steps
 * and marks unused for a while are pruned (`prune`, see VolumeUse).
 */
export class StepCache {
  readonly #storage: Storage;
  readonly #use: VolumeUse;

  constructor(storage: Storage) {
    this.#storage = storage;
    this.#use = new VolumeUse(storage.path(poolLayout.buildCacheUse));
  }

  volume(key: string): string {
    return poolLayout.buildStep(key);
  }

  /** Whether step `key` is cached; a cached one counts as used (kept from prunes from now on). */
  async has(key: string): Promise<boolean> {
    const volume = this.volume(key);
    await this.#use.hold(volume);
    if (!(await this.#storage.exists(volume))) return false;
    await this.#use.use(volume);
    return true;
  }

  path(volume: string): string {
    return this.#storage.path(volume);
  }

  /** Whether `dir` is a directory in a volume (links followed inside it). */
  async hasDir(volume: string, dir: string): Promise<boolean> {
    const parts = layerPathParts(dir);
    if (!parts) return false;
    return resolveDirInScope(this.#storage.path(volume), parts, false).then(
      () => true,
      () => false,
    );
  }

  /** Step `key` made by `write` on a writable snapshot of `parent` (a volume key). */
  async make(key: string, parent: string, write: (root: string) => Promise<void>): Promise<string> {
    const draft = poolLayout.buildStepDraft(`${key.slice(0, 16)}-${randomBytes(4).toString('hex')}`);
    try {
      const root = await this.#storage.prepare(draft, parent);
      await write(root);
      return await this.#commit(key, draft, false);
    } catch (err) {
      await this.#storage.remove(draft).catch(() => {});
      throw err;
    }
  }

  /** Step `key` as a read-only snapshot of `source` (a build sandbox's snapshot root), which stays. */
  adopt(key: string, source: string): Promise<string> {
    return this.#commit(key, source, true);
  }

  async #commit(key: string, source: string, keepActive: boolean): Promise<string> {
    const volume = this.volume(key);
    await this.#use.use(volume);
    try {
      await this.#storage.commit(volume, source, { keepActive });
    } catch (err) {
      // Another build made the same step meanwhile: equal keys are equal trees.
      if (!(await this.#storage.exists(volume))) throw err;
      if (!keepActive) await this.#storage.remove(source).catch(() => {});
    }
    return volume;
  }

  /** Whether a step that changes no files was made before (see mark). */
  async marked(key: string): Promise<boolean> {
    const file = join(this.#storage.path(poolLayout.buildStepMarks), key);
    await this.#use.hold(markKey(key));
    const now = new Date();
    return utimes(file, now, now).then(
      () => true,
      () => false,
    );
  }

  /** Records a step that changes no files (its volume is its parent's), so a rebuild reports it CACHED as Docker does. */
  async mark(key: string): Promise<void> {
    const dir = this.#storage.path(poolLayout.buildStepMarks);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    await writeFile(join(dir, key), '');
  }

  /**
   * Removes the steps and marks neither made nor used within `maxAgeMs`
   * (a mark's use is its file's mtime). Templates made from a step keep
   * their files: a volume is a snapshot, sharing extents, not ownership.
   */
  async prune(maxAgeMs: number, now = Date.now()): Promise<{ removed: string[]; failed: number }> {
    const steps = await this.#use.prune(this.#stepEntries(), maxAgeMs, now);
    const marks = await this.#use.prune(this.#markEntries(), maxAgeMs, now);
    return { removed: [...steps.removed, ...marks.removed], failed: steps.failed + marks.failed };
  }

  #stepEntries(): PrunableCache {
    return {
      keys: async () => (await this.#storage.list(poolLayout.buildSteps).catch(() => [])).filter((k) => !poolLayout.isDraft(k)),
      madeAt: async (volume) => (await stat(this.#storage.path(volume)).catch(() => undefined))?.ctimeMs,
      remove: (volume) => this.#storage.remove(volume),
    };
  }

  #markEntries(): PrunableCache {
    const dir = this.#storage.path(poolLayout.buildStepMarks);
    const file = (mark: string): string => join(dir, mark.slice(markKey('').length));
    return {
      keys: async () => (await readdir(dir).catch(() => [])).map(markKey),
      madeAt: async (mark) => (await stat(file(mark)).catch(() => undefined))?.mtimeMs,
      remove: (mark) => unlink(file(mark)).catch(() => {}),
    };
  }

  /** Removes drafts a crash left. */
  async sweep(): Promise<void> {
    for (const key of await this.#storage.list(poolLayout.buildSteps).catch(() => [])) if (poolLayout.isDraft(key)) await this.#storage.remove(key);
  }
}

/** A step mark's key among the use records (apart from the volumes'). */
function markKey(key: string): string {
  return `${poolLayout.buildStepMarks}/${key}`;
}
