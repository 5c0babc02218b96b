import { access, chmod, lchown, lstat, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import { parseIdmapRecord, parseLayoutRecord } from './checkpoint-records.js';
import type { CheckpointImages, IdMap } from './runtime.js';

/**
 * What the container runtime keeps in and reads from a checkpoint's images
 * directory beside CRIU's own files: the user namespace range, the network
 * namespace's kind, and the images' ownership for a restore into a user
 * namespace.
 */

/** A runc checkpoint's images: CRIU's (whole once its inventory is written, pages in `pages-*.img`) and forkd's idmap file. */
export const runcImages: CheckpointImages = {
  complete: (dir) => access(join(dir, 'inventory.img')).then(() => true, () => false),
  isPages: (name) => name.startsWith('pages-'),
  idmap: (dir) => readIdmap(dir),
};

/** What a restore of the images copies into memory: their pages images' sizes. */
export async function pagesBytes(imagesDir: string): Promise<number> {
  const names = (await readdir(imagesDir)).filter((n) => runcImages.isPages(n));
  const sizes = await Promise.all(names.map((n) => lstat(join(imagesDir, n)).then((st) => (st.isFile() ? st.size : 0))));
  return sizes.reduce((a, b) => a + b, 0);
}

/** In a bundle and in every checkpoint's images: the user namespace range (RuntimeSpec.idmap), as JSON. */
export const IDMAP_FILE = 'forkd-idmap.json';

export async function readIdmap(imagesDir: string): Promise<IdMap | undefined> {
  const bytes = await readRecord(imagesDir, IDMAP_FILE);
  if (!bytes) return undefined;
  const r = parseIdmapRecord(bytes);
  if (r.kind === 'malformed') throw malformed(IDMAP_FILE, imagesDir);
  return r.idmap;
}

/** In a bundle and in every checkpoint's images: the sandbox's mount layout, as JSON (see oci-spec.ts devMounts). */
export const LAYOUT_FILE = 'forkd-layout.json';

/**
 * Whether the images were dumped with /dev the root's own directory (a
 * bind) rather than a tmpfs: a restore gives runc the layout the images
 * hold. Images from before the record have a tmpfs archive when /dev was a
 * tmpfs (it always was, then).
 */
export async function dumpedWithDevInRoot(imagesDir: string): Promise<boolean> {
  const bytes = await readRecord(imagesDir, LAYOUT_FILE);
  if (bytes) {
    const r = parseLayoutRecord(bytes);
    if (r.kind === 'malformed') throw malformed(LAYOUT_FILE, imagesDir);
    return r.devInRoot;
  }
  return !(await readdir(imagesDir).catch(() => [] as string[])).some((f) => /^tmpfs-dev-\d+\.tar\.gz\.img$/.test(f));
}

/** A record's bytes; undefined when the images have none (older ones). Other read errors are not hidden. */
async function readRecord(imagesDir: string, name: string): Promise<Uint8Array | undefined> {
  return readFile(join(imagesDir, name)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
}

/** The path goes to the log only: a tenant learns that the snapshot cannot be restored, not where it lives. */
function malformed(name: string, imagesDir: string): ForkdError {
  return new ForkdError('INTERNAL', `the images of this snapshot carry a malformed ${name}; it cannot be restored`, { imagesDir });
}

/**
 * Checkpoints taken before forkd owned network namespaces carry their own;
 * newer ones name the host's namespace by runc's external key instead.
 */
export async function carriesOwnNetns(imagesDir: string): Promise<boolean> {
  const img = (await readdir(imagesDir).catch(() => [] as string[])).find((f) => /^netns-\d+\.img$/.test(f));
  if (!img) return false;
  return !(await readFile(join(imagesDir, img))).includes('extRootNetNS');
}

/**
 * CRIU opens images from inside the restored user namespace, through its
 * directory's descriptor: first as host root before the namespace has its
 * mapping (racing CRIU's own write of it), later as the sandbox's root
 * (host id hostId), with no capability over root-owned files. So they are
 * owned by the sandbox's root and readable by group root (0640, directory
 * 0750): both can read them, no other host user can (and their directory
 * stays inside the root-only pool). The same range's memory; one flat
 * directory, nothing in it followed.
 */
export async function ownImages(dir: string, hostId: number): Promise<void> {
  const owning = inFlight.get(dir);
  if (owning) return owning;
  const p = (async () => {
    // All at once: a restore waits for this, and each file is a few syscalls on the thread pool.
    await Promise.all((await readdir(dir)).map((name) => ownImage(join(dir, name), hostId)));
    const st = await lstat(dir);
    if (st.uid !== hostId || st.gid !== 0) await lchown(dir, hostId, 0);
    if ((st.mode & 0o777) !== 0o750) await chmod(dir, 0o750);
  })().finally(() => inFlight.delete(dir));
  inFlight.set(dir, p);
  return p;
}

async function ownImage(f: string, hostId: number): Promise<void> {
  // Another restore of the same images (an N-way fork) may be done and have removed its broker's
  // socket (`.uffd-<id>.sock`) since the listing: what is gone needs no owner.
  const st = await lstat(f).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!st?.isFile()) return;
  if (st.uid !== hostId || st.gid !== 0) await lchown(f, hostId, 0);
  if ((st.mode & 0o777) !== 0o640) await chmod(f, 0o640);
}

/** Restores of one snapshot at once (an N-way fork) share one pass over its images. */
const inFlight = new Map<string, Promise<void>>();
