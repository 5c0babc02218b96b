import { mkdir, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** What a prune needs of the cache it prunes. */
export interface PrunableCache {
  /** Every entry's key (volume keys, or names of plain files). */
  keys(): Promise<string[]>;
  /** When the entry was made, for one never used since (ms since the epoch). */
  madeAt(key: string): Promise<number | undefined>;
  remove(key: string): Promise<void>;
}

/**
 * Last use of a cache's entries (Dockerfile steps, image layers), kept as
 * the mtimes of empty files in a plain directory of the pool, so it outlives
 * the daemon and costs no database. Read-only volumes cannot carry it
 * themselves.
 *
 * A prune removes entries unused for longer than its age, and never one in
 * use: `use` marks a key synchronously before anything awaits, and the prune
 * decides and starts a removal in one turn of the event loop after checking
 * that mark, so a build that asked for an entry keeps it; one that asks
 * while it is being removed waits for the removal and sees it gone.
 */
export class VolumeUse {
  readonly #dir: string;
  readonly #touched = new Map<string, number>();
  readonly #removing = new Map<string, Promise<void>>();

  constructor(dir: string) {
    this.#dir = dir;
  }

  /** Marks `key` used now; resolves once recorded. Waits for a removal of it under way. */
  async use(key: string, now = Date.now()): Promise<void> {
    await this.hold(key, now);
    const file = join(this.#dir, markName(key));
    const t = new Date(now);
    await utimes(file, t, t).catch(async () => {
      await mkdir(this.#dir, { recursive: true, mode: 0o700 });
      await writeFile(file, '');
      await utimes(file, t, t);
    });
  }

  /**
   * Keeps `key` from a prune from now on, without recording a use (for a
   * lookup that may find nothing); resolves once a removal under way is over.
   */
  async hold(key: string, now = Date.now()): Promise<void> {
    this.#touched.set(key, now);
    await this.#removing.get(key);
  }

  async lastUse(key: string): Promise<number | undefined> {
    const s = await stat(join(this.#dir, markName(key))).catch(() => undefined);
    return Math.max(s?.mtimeMs ?? 0, this.#touched.get(key) ?? 0) || undefined;
  }

  /** Removes the entries of `cache` neither used nor made within `maxAgeMs`; an entry that fails to go is left and counted. */
  async prune(cache: PrunableCache, maxAgeMs: number, now = Date.now()): Promise<{ removed: string[]; failed: number }> {
    const started = Date.now();
    const removed: string[] = [];
    let failed = 0;
    for (const key of await cache.keys()) {
      const last = (await this.lastUse(key)) ?? (await cache.madeAt(key)) ?? now;
      // Checked again after the awaits above, in the same turn as the removal starts.
      if (now - last <= maxAgeMs || (this.#touched.get(key) ?? 0) >= started || this.#removing.has(key)) continue;
      const removal = cache.remove(key).then(() => unlink(join(this.#dir, markName(key))).catch(() => {}));
      this.#removing.set(key, removal);
      try {
        await removal;
        removed.push(key);
      } catch {
        failed++;
      } finally {
        this.#removing.delete(key);
        this.#touched.delete(key);
      }
    }
    return { removed, failed };
  }
}

/** A key as one file name (volume keys have slashes). */
function markName(key: string): string {
  return key.replaceAll('/', '~');
}
