import { randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, readFile, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError, formatImageRef, isLocalImageRef, parseImageRef, type ImageRef, type RegistryAuth } from '@forkd/protocol';
import type { Logger } from '../../shared/logger.js';
import { poolLayout } from '../storage/pool-layout.js';
import type { Storage } from '../storage/storage.js';
import { VolumeUse } from '../storage/volume-use.js';
import { chainIds, parseImageConfig, parseManifest, type ImageConfig, type ImageDefaults } from './image-config.js';
import { applyLayer, fileDigest, LayerError, type UnpackBudget } from './layer-apply.js';
import type { RegistryAccess } from './registry-access.js';
import { existsInScope } from './scoped-path.js';
import { copyToDir, inspectConfig, pullBytes, type SkopeoCall } from './skopeo.js';
import { bytesNote, bytesRead, dirBytes, whileMeasured } from './pull-progress.js';

/** How often a pull in progress says how far it got. */
const PULL_REPORT_MS = 5_000;

/** A template's root made from an image: what a template build (or a Dockerfile's FROM) starts from. */
export interface ImageVolume {
  /** Read-only volume holding the image's tree with a sandbox's mount points. */
  rootKey: string;
  /** The top layer's chain id: equal for equal trees, whatever the reference. */
  cacheKey: string;
  /** The reference as pulled (canonical form). */
  ref: string;
  defaults: ImageDefaults;
  /** How `command` strings run when the image has no /bin/bash: `/bin/sh -c`; absent: bash (or no shell at all). */
  shell?: string[] | undefined;
}

export interface ImageVolumesDeps {
  storage: Storage;
  access: RegistryAccess;
  /** Bytes and files one image may unpack to (FORKD_IMAGE_MAX_MB). */
  maxBytes: number;
  logger: Logger;
}

const MAX_FILES = 2_000_000;
/** Made when an image lacks them: runc mounts there, and a root user needs a /tmp. */
const MOUNT_POINTS: [string, number][] = [['proc', 0o555], ['sys', 0o555], ['dev', 0o755], ['tmp', 0o1777], ['etc', 0o755]];

/**
 * Images as volumes. A pull asks the image's config first: when the volume
 * of its top layer chain is there, nothing is downloaded. Otherwise skopeo
 * copies it (layers decompressed) into a private directory, each layer is
 * checked against its diff id and applied onto a snapshot of the chain
 * below it (shared by every image with the same lower layers), and the
 * top chain gets its mount points. One pull (or prune) at a time per node.
 */
export class ImageVolumes {
  readonly #d: ImageVolumesDeps;
  readonly #use: VolumeUse;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(deps: ImageVolumesDeps) {
    this.#d = deps;
    this.#use = new VolumeUse(deps.storage.path(poolLayout.buildCacheUse));
  }

  /** The root volume for an image reference (pulled and unpacked when not cached). */
  volumeFor(refText: string, opts: { auth?: RegistryAuth | undefined; progress: (line: string) => void | Promise<void> }): Promise<ImageVolume> {
    const parsed = parseImageRef(refText);
    if (!parsed.ok) throw new ForkdError('INVALID_ARGUMENT', `invalid image reference: ${parsed.error}`);
    return this.#queued(() => this.#pull(parsed.ref, opts.auth, opts.progress));
  }

  /**
   * Removes layer volumes neither made nor used within `maxAgeMs`, between
   * pulls (a pull marks what it returns as used, so its build keeps it).
   * Templates made from an image keep their files (snapshots share extents).
   */
  prune(maxAgeMs: number, now = Date.now()): Promise<{ removed: string[]; failed: number }> {
    const { storage } = this.#d;
    return this.#queued(() =>
      this.#use.prune(
        {
          keys: async () => (await storage.list(poolLayout.imageLayers).catch(() => [])).filter((k) => !poolLayout.isDraft(k)),
          madeAt: async (key) => (await stat(storage.path(key)).catch(() => undefined))?.ctimeMs,
          remove: (key) => storage.remove(key),
        },
        maxAgeMs,
        now,
      ),
    );
  }

  #queued<T>(job: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(job);
    this.#queue = run.catch(() => {});
    return run;
  }

  async #pull(ref: ImageRef, auth: RegistryAuth | undefined, progress: (line: string) => void | Promise<void>): Promise<ImageVolume> {
    const { storage } = this.#d;
    const dir = storage.path(`${poolLayout.imagePulls}/${randomBytes(8).toString('hex')}`);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const call: SkopeoCall = { ref, access: this.#d.access, auth, privateDir: dir, logger: this.#d.logger };
    const name = formatImageRef(ref);
    try {
      if (isLocalImageRef(ref)) await assertReadable(ref.path, name);
      await progress(`image ${name}: reading its config`);
      let config = parsed(parseImageConfig(await inspectConfig(call)));
      let chains = chainIds(config.diffIds);
      const top = chains.at(-1)!;
      if (!(await storage.exists(poolLayout.imageRoot(top)))) {
        await progress(`image ${name}: pulling ${config.diffIds.length} layer(s)`);
        const copy = join(dir, 'image');
        await this.#copy(call, copy, progress, name);
        // What was copied is what counts (a tag may have moved since the inspect).
        const layers = await readCopy(copy);
        config = layers.config;
        chains = chainIds(config.diffIds);
        await this.#unpack(copy, layers.blobs, config.diffIds, chains, progress, name);
        await this.#root(chains.at(-1)!);
      } else await progress(`image ${name}: cached`);
      const rootKey = poolLayout.imageRoot(chains.at(-1)!);
      for (const key of [rootKey, ...chains.map((c) => poolLayout.imageLayer(c))]) await this.#use.use(key);
      const rootPath = storage.path(rootKey);
      const shell = !(await existsInScope(rootPath, '/bin/bash')) && (await existsInScope(rootPath, '/bin/sh')) ? ['/bin/sh', '-c'] : undefined;
      return { rootKey, cacheKey: chains.at(-1)!, ref: name, defaults: config.defaults, ...(shell ? { shell } : {}) };
    } finally {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
    }
  }

  /**
   * The copy, with its progress: bytes fetched against the manifest's sizes
   * (asked for beside the copy) once both are known, else the bytes written.
   */
  async #copy(call: SkopeoCall, copy: string, progress: (line: string) => void | Promise<void>, name: string): Promise<void> {
    const t0 = Date.now();
    let total: number | undefined;
    const sized = pullBytes(call).then((b) => void (total = b));
    let pid: number | undefined;
    // The total a count is shown against is the one it was measured for (the sizes may land in between).
    let against: number | undefined;
    const measure = async () => {
      against = pid === undefined ? undefined : total;
      return against === undefined ? dirBytes(copy) : Math.min(against, await bytesRead(pid!));
    };
    try {
      await whileMeasured(measure, PULL_REPORT_MS, (bytes) => progress(`image ${name}: pulling ${bytesNote(bytes, against, Date.now() - t0)}`), copyToDir(call, copy, (p) => (pid = p)));
    } finally {
      await sized;
    }
  }

  /** Each missing chain: a snapshot of the one below (or an empty volume), its layer applied, then committed read-only. */
  async #unpack(copy: string, blobs: string[], diffIds: string[], chains: string[], progress: (line: string) => void | Promise<void>, name: string): Promise<void> {
    const { storage } = this.#d;
    const budget: UnpackBudget = { bytesLeft: this.#d.maxBytes, entriesLeft: MAX_FILES };
    // What is left to unpack, in bytes: the progress lines say how far along and how long to go.
    const missing = await Promise.all(chains.map(async (c) => !(await storage.exists(poolLayout.imageLayer(c)))));
    const sizes = await Promise.all(blobs.map((b, i) => (missing[i] ? stat(join(copy, b)).then((s) => s.size) : 0)));
    const total = sizes.reduce((a, b) => a + b, 0);
    const t0 = Date.now();
    let done = 0;
    for (let i = 0; i < chains.length; i++) {
      const chain = chains[i]!;
      if (!missing[i]) continue;
      const blob = join(copy, blobs[i]!);
      // Before a byte of it is unpacked: a layer is trusted as the tree of its chain id only if it is its diff id's bytes.
      if ((await fileDigest(blob)) !== diffIds[i]) throw new ForkdError('INVALID_ARGUMENT', `image ${name}: layer ${i + 1} does not match its diff id`);
      await progress(`image ${name}: unpacking layer ${i + 1}/${chains.length} ${bytesNote(done, total, Date.now() - t0)}`);
      const draft = poolLayout.imageDraft(`${chain.slice(7, 19)}-${randomBytes(4).toString('hex')}`);
      try {
        // A new volume's root is made under the daemon's umask (0700): an image's users must pass it.
        if (i === 0) await chmod(await storage.create(draft), 0o755);
        else await storage.prepare(draft, poolLayout.imageLayer(chains[i - 1]!));
        await applyLayer(storage.path(draft), blob, budget);
        await storage.commit(poolLayout.imageLayer(chain), draft);
        done += sizes[i] ?? 0;
      } catch (err) {
        await storage.remove(draft).catch(() => {});
        if (err instanceof LayerError) throw new ForkdError('INVALID_ARGUMENT', `image ${name}: layer ${i + 1}: ${err.message}`);
        throw err;
      }
    }
  }

  /** The top chain plus the mount points a sandbox needs, as a volume of its own (the chain stays the image's exact tree). */
  async #root(top: string): Promise<void> {
    const { storage } = this.#d;
    const draft = poolLayout.imageDraft(`${top.slice(7, 19)}-root-${randomBytes(4).toString('hex')}`);
    try {
      const p = await storage.prepare(draft, poolLayout.imageLayer(top));
      for (const [d, mode] of MOUNT_POINTS) {
        if (await lstat(join(p, d)).catch(() => undefined)) continue;
        await mkdir(join(p, d));
        await chmod(join(p, d), mode);
      }
      await storage.commit(poolLayout.imageRoot(top), draft);
    } catch (err) {
      await storage.remove(draft).catch(() => {});
      throw err;
    }
  }

  /** Removes half-made layer volumes and pull directories left by a crash. */
  async sweep(): Promise<void> {
    for (const key of await this.#d.storage.list(poolLayout.imageLayers).catch(() => [])) if (poolLayout.isDraft(key)) await this.#d.storage.remove(key);
    await rm(this.#d.storage.path(poolLayout.imagePulls), { recursive: true, force: true });
  }
}

function parsed<T>(r: { ok: true; value: T } | { ok: false; error: string }): T {
  if (!r.ok) throw new ForkdError('INVALID_ARGUMENT', r.error);
  return r.value;
}

/** A local image must be a file or directory the server can read; its path is never echoed beyond the reference itself. */
async function assertReadable(path: string, name: string): Promise<void> {
  if (!(await lstat(path).catch(() => undefined))) throw new ForkdError('NOT_FOUND', `image ${name} not found`);
}

/** The copy's manifest and config, and its layer blobs' file names in order. */
async function readCopy(copy: string): Promise<{ config: ImageConfig; blobs: string[] }> {
  const manifest = parsed(parseManifest(await readFile(join(copy, 'manifest.json'), 'utf8')));
  const config = parsed(parseImageConfig(await readFile(join(copy, manifest.config.digest.slice(7)), 'utf8')));
  if (manifest.layers.length !== config.diffIds.length) throw new ForkdError('INVALID_ARGUMENT', 'the image has a different number of layers than its config lists');
  return { config, blobs: manifest.layers.map((l) => l.digest.slice(7)) };
}
