import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import { exec } from '../../shared/exec.js';
import { poolLayout } from './pool-layout.js';
import type { Storage } from './storage.js';
import type { CheckpointImages } from '../runtime/runtime.js';
import { storeImages, type StoreStats } from './image-store.js';
import { checkStagingDir } from './staging-dir.js';
import { memAvailableBytes } from './host-space.js';

/** In a snapshot directory: its memory images are still in staging, at the path this file holds. */
const STAGED_MARKER = 'staged';
/** In a draft: the frozen instance its dump is still to be taken from (a rewind's state left), as this file says (see dumpLater). */
const FROZEN_MARKER = 'frozen-instance';

/** A snapshot being written: under `.tmp-*` until published, so a crash never leaves a half-made one that looks whole. */
export interface SnapshotDraft {
  /** Where the dump writes memory images (staging, or the draft's own `memory/`). */
  readonly imagesDir: string;
  /** Where CRIU writes its log. */
  readonly workDir: string;
  /** Storage key the read-only root is committed to (while frozen). */
  readonly rootfsKey: string;
  /** Whether the images went to staging (memory) first. */
  readonly staged: boolean;
  /**
   * After the dump: with `defer` (and staged) only marks the images as still
   * in staging (see storeLater); otherwise stores them into the draft, with
   * page sharing against `previous`. Returns the memory bytes written (0 when deferred).
   */
  seal(opts: { defer: boolean; previous: string | undefined }): Promise<{ memoryBytes: number; deferred: boolean }>;
  /**
   * Before the dump (a dump deferred, see SnapshotFiles.dumpLater): says
   * which frozen instance it is to be taken from, so a restart of the
   * daemon takes it (SnapshotFiles.frozenDrafts) instead of removing the
   * draft. `note` is the caller's (the instance key and what the dump needs).
   */
  markFrozen(note: string): Promise<void>;
  /** Renames the finished draft into place. */
  publish(): Promise<void>;
  /** Removes what the draft made (a failed dump). */
  discard(): Promise<void>;
}

/**
 * Where a snapshot's memory images and root live, and every filesystem
 * operation on them: written under a temp name and published by rename,
 * memory dumped into staging (tmpfs) when it fits and stored into the pool
 * with page sharing, finished after a crash, removed. The manager builds no
 * path of its own.
 */
export interface SnapshotFiles {
  /** Host path of a snapshot's directory (rootfs/, memory/, work/). */
  dir(snapId: string): string;
  /** Host path of its memory images (a restore reads them). */
  memoryDir(snapId: string): string;
  /** Storage key of its read-only root. */
  rootfsKey(snapId: string): string;
  /** Whether a dump of a sandbox using `memoryBytes` may go to staging first. */
  canStage(memoryBytes: number | undefined): Promise<boolean>;
  draft(snapId: string, stage: boolean): Promise<SnapshotDraft>;
  /** A deferred draft's images, moved from staging into the pool in the background (`onStored` records their size). */
  storeLater(snapId: string, previous: string | undefined): void;
  /**
   * A snapshot recorded before its dump is taken (a rewind's state left,
   * dumped after the rewind answers): everything that reads or removes it
   * waits for `done` first, as for a store in progress.
   */
  dumpLater(snapId: string, done: Promise<unknown>): void;
  /** Drafts marked frozen (markFrozen) whose dump a crash interrupted: their snapshot ids and notes. */
  frozenDrafts(): Promise<Array<{ snapId: string; note: string }>>;
  /** Throws UNAVAILABLE when its images could not be stored (waits for a store in progress). */
  checkRestorable(snapId: string): Promise<void>;
  /** Whether its images and root are whole (recovery's choice of a snapshot). */
  restorable(snapId: string): Promise<boolean>;
  /** Waits for a store in progress, then removes its directory (a name under `snapshots/`, `.tmp-*` included). */
  remove(name: string): Promise<void>;
  /**
   * At start: directories without a record (or half-made) go, stores a
   * crash interrupted are finished, staging directories nothing names go.
   * `forget` is called for a recorded snapshot whose images were lost.
   */
  recoverAtStart(recorded: (name: string) => Promise<{ parentId?: string | undefined } | undefined>, forget: (snapId: string) => Promise<void>): Promise<void>;
  /** Resolves once every background store is done. */
  settled(): Promise<void>;
}

export interface PoolSnapshotFilesDeps {
  storage: Storage;
  /** Memory-backed directory for CRIU dumps (see storeImages). */
  stagingDir?: string | undefined;
  /** The runtime's layout of images (Runtime.images): which files hold pages, when a directory is whole. */
  images: CheckpointImages;
  logger: Logger;
  /** A deferred store finished: its memory bytes. */
  onStored(snapId: string, bytes: number): Promise<void>;
}

/** Snapshots in the pool: `snapshots/<snap>/` (see docs/ARCHITECTURE.md, Storage). */
export class PoolSnapshotFiles implements SnapshotFiles {
  readonly #d: PoolSnapshotFilesDeps;
  /** Snapshots whose memory images are still being moved from staging into the pool (see storeLater). */
  readonly #storing = new Map<string, Promise<void>>();
  /** Snapshots recorded whose dump is still to come (see dumpLater). */
  readonly #dumping = new Map<string, Promise<void>>();
  /** Background stores sharing pages with a snapshot, by that snapshot: its removal waits for them. */
  readonly #sharing = new Map<string, Set<Promise<void>>>();

  constructor(deps: PoolSnapshotFilesDeps) {
    this.#d = deps;
  }

  dir(snapId: string): string {
    return this.#d.storage.path(poolLayout.snapshot(snapId));
  }

  memoryDir(snapId: string): string {
    return join(this.dir(snapId), 'memory');
  }

  rootfsKey(snapId: string): string {
    return poolLayout.snapshotRoot(snapId);
  }

  /** Staging in tmpfs only while the sandbox's memory is well below what the host has free. */
  async canStage(memoryBytes: number | undefined): Promise<boolean> {
    if (!this.#d.stagingDir) return false;
    // The dump and the action script's hook file go in there: still root's own private directory (see staging-dir.ts).
    await checkStagingDir(this.#d.stagingDir);
    return (memoryBytes ?? Number.POSITIVE_INFINITY) < (await memAvailableBytes()) / 3;
  }

  async draft(snapId: string, stage: boolean): Promise<SnapshotDraft> {
    const tmpName = `.tmp-${snapId}`;
    const tmp = this.dir(tmpName);
    await mkdir(tmp, { recursive: true });
    // Dump into memory (tmpfs) when it fits comfortably: the freeze then lasts
    // as long as a RAM copy, and the pool write with page sharing comes after.
    const staging = stage && this.#d.stagingDir ? join(this.#d.stagingDir, snapId) : undefined;
    return {
      imagesDir: staging ?? join(tmp, 'memory'),
      workDir: join(tmp, 'work'),
      rootfsKey: this.rootfsKey(tmpName),
      staged: !!staging,
      seal: async ({ defer, previous }) => {
        if (staging && defer) {
          // Written before the rename: a snapshot dir without memory always says where it is.
          await writeFile(join(tmp, STAGED_MARKER), staging);
          return { memoryBytes: 0, deferred: true };
        }
        if (staging) {
          const stats = await this.#storeImages(staging, snapId, tmp, previous);
          this.#freeStaging(staging);
          return { memoryBytes: stats.bytesWritten, deferred: false };
        }
        return { memoryBytes: Number((await exec('du', ['-sb', join(tmp, 'memory')])).stdout.split('\t')[0]) || 0, deferred: false };
      },
      markFrozen: (note) => writeFile(join(tmp, FROZEN_MARKER), note, { mode: 0o600 }),
      // The marker travels with the rename; once published it means nothing (frozenDrafts reads drafts only).
      publish: async () => {
        await rename(tmp, this.dir(snapId));
        await rm(join(this.dir(snapId), FROZEN_MARKER), { force: true });
      },
      discard: async () => {
        await this.remove(tmpName).catch(() => {});
        if (staging) await rm(staging, { recursive: true, force: true });
      },
    };
  }

  /** Freeing 100 MB of tmpfs takes ~15 ms that nobody needs to wait for (a staging name is never reused). */
  #freeStaging(staging: string): void {
    void rm(staging, { recursive: true, force: true }).catch(() => {});
  }

  /** Staging → pool, sharing pages with the previous snapshot (once that one is stored itself). */
  async #storeImages(staging: string, snapId: string, dir: string, previous: string | undefined): Promise<StoreStats> {
    if (previous) await this.#whole(previous);
    const prevDir = previous ? this.memoryDir(previous) : undefined;
    const stats = await storeImages(staging, join(dir, 'memory'), prevDir && existsSync(prevDir) ? prevDir : undefined, this.#d.images.isPages);
    this.#d.logger.debug('snapshot stored', { snapshot: snapId, ...stats });
    return stats;
  }

  /**
   * A rewind must not wait for the state it leaves to be stored with page
   * sharing (~50-100 ms of page compares): its snapshot is recorded as soon
   * as it is dumped, with its images still in staging (tmpfs) and a marker
   * saying so; everything that reads or removes them waits for this. A
   * daemon crash meanwhile leaves the staging dir in place and recovery
   * finishes the move; only a host reboot (which takes every running
   * sandbox's memory with it too) can lose them.
   */
  storeLater(snapId: string, previous: string | undefined, staging = join(this.#d.stagingDir ?? '', snapId)): void {
    const dir = this.dir(snapId);
    const p = this.#storeImages(staging, snapId, dir, previous)
      .then(async (stats) => {
        await this.#d.onStored(snapId, stats.bytesWritten);
        // Marker first: a marker without its staging dir means the images are lost (see #finishStore).
        await rm(join(dir, STAGED_MARKER), { force: true });
        this.#freeStaging(staging);
      })
      .catch((err) => this.#d.logger.error('snapshot images could not be stored', { snapshot: snapId, error: String(err) }))
      .finally(() => {
        this.#storing.delete(snapId);
        if (previous) this.#sharing.get(previous)?.delete(p);
      });
    this.#storing.set(snapId, p);
    if (previous) this.#sharing.set(previous, (this.#sharing.get(previous) ?? new Set()).add(p));
  }

  /** Waits for a dump still to come, then for the store of its images. */
  async #whole(snapId: string): Promise<void> {
    await this.#dumping.get(snapId);
    await this.#storing.get(snapId);
  }

  dumpLater(snapId: string, done: Promise<unknown>): void {
    const p = done.then(
      () => {},
      () => {},
    );
    this.#dumping.set(snapId, p);
    void p.finally(() => {
      if (this.#dumping.get(snapId) === p) this.#dumping.delete(snapId);
    });
  }

  async frozenDrafts(): Promise<Array<{ snapId: string; note: string }>> {
    const out: Array<{ snapId: string; note: string }> = [];
    const root = this.#d.storage.path(poolLayout.snapshots);
    for (const name of await readdir(root).catch(() => [] as string[])) {
      if (!name.startsWith('.tmp-')) continue;
      const note = await readFile(join(root, name, FROZEN_MARKER), 'utf8').catch(() => undefined);
      if (note !== undefined) out.push({ snapId: name.slice('.tmp-'.length), note });
    }
    return out;
  }

  async checkRestorable(snapId: string): Promise<void> {
    await this.#whole(snapId);
    // A store that failed leaves images half-patched: restoring them would bring back wrong memory.
    if (existsSync(join(this.dir(snapId), STAGED_MARKER))) throw new ForkdError('UNAVAILABLE', `the memory images of snapshot ${snapId} could not be stored (see the node's log); it cannot be restored until a restart retries`);
  }

  async restorable(snapId: string): Promise<boolean> {
    await this.#whole(snapId);
    const dir = this.dir(snapId);
    return (await this.#d.images.complete(join(dir, 'memory'))) && existsSync(join(dir, 'rootfs')) && !existsSync(join(dir, STAGED_MARKER));
  }

  async remove(name: string): Promise<void> {
    await this.#whole(name);
    // A later snapshot's store still reading its pages would fail half-way (its images then unrestorable).
    await Promise.all(this.#sharing.get(name) ?? []);
    this.#sharing.delete(name);
    // A store that failed keeps its staging dir for a restart to retry: with the snapshot gone, it goes too.
    const staged = this.#ownStaging(await stagedPath(join(this.dir(name), STAGED_MARKER)));
    await this.#d.storage.remove(poolLayout.snapshotRoot(name));
    await rm(this.dir(name), { recursive: true, force: true });
    if (staged) await rm(staged, { recursive: true, force: true });
  }

  /** A path a `staged` marker names, if it is a directory of this node's staging (nothing else is ever removed by one). */
  #ownStaging(path: string | undefined): string | undefined {
    return path && this.#d.stagingDir && dirname(path) === resolve(this.#d.stagingDir) ? path : undefined;
  }

  async recoverAtStart(recorded: (name: string) => Promise<{ parentId?: string | undefined } | undefined>, forget: (snapId: string) => Promise<void>): Promise<void> {
    const stagedKept = new Set<string>();
    // Half-made snapshots (crash before the rename) and ones whose record never landed.
    for (const key of await this.#d.storage.list(poolLayout.snapshots)) {
      const name = key.split('/')[1] ?? '';
      const rec = name.startsWith('.tmp-') ? undefined : await recorded(name);
      if (!rec) await this.remove(name).catch(() => {});
      else {
        await this.#finishStore(name, rec.parentId, forget);
        const staged = await stagedPath(join(this.dir(name), STAGED_MARKER));
        if (staged) stagedKept.add(staged);
      }
    }
    if (this.#d.stagingDir) await sweepStaging(this.#d.stagingDir, stagedKept, this.#d.logger);
  }

  /** A snapshot recorded with its images still in staging when the daemon stopped. */
  async #finishStore(snapId: string, previous: string | undefined, forget: (snapId: string) => Promise<void>): Promise<void> {
    const staging = await stagedPath(join(this.dir(snapId), STAGED_MARKER));
    if (!staging) return;
    if (this.#ownStaging(staging) && existsSync(staging)) {
      this.storeLater(snapId, previous, staging);
      return;
    }
    // The host rebooted before they were stored: a snapshot without memory cannot be restored.
    this.#d.logger.error('snapshot lost its memory images (host reboot before they were stored)', { snapshot: snapId });
    await forget(snapId);
    await this.remove(snapId).catch(() => {});
  }

  async settled(): Promise<void> {
    await Promise.all(this.#dumping.values());
    await Promise.all(this.#storing.values());
  }
}

/**
 * Staging directories (tmpfs) nothing will move into the pool any more: a
 * dump interrupted by a crash, a store cut short. Those a `staged` marker
 * still names (`keep`) are being stored.
 */
export async function sweepStaging(stagingDir: string, keep: ReadonlySet<string>, logger: Logger): Promise<void> {
  for (const name of await readdir(stagingDir).catch(() => [] as string[])) {
    const p = join(stagingDir, name);
    if (keep.has(p)) continue;
    logger.info('removing a staging directory left by an interrupted operation', { path: p });
    await rm(p, { recursive: true, force: true }).catch(() => {});
  }
}

/** The staging path a snapshot directory's marker names, if its images are still there. */
export async function stagedPath(marker: string): Promise<string | undefined> {
  return (await readFile(marker, 'utf8').catch(() => '')).trim() || undefined;
}
