import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { chmod, lchown, link, lstat, lutimes, mkdir, open, readdir, rm, symlink, chown, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { layerPathParts, resolveDirInScope, ScopeError } from './scoped-path.js';
import { tarEntries, type TarEntry } from './tar-reader.js';

/** What an image may put on disk, counted over all its layers (image-volumes.ts holds one per build). */
export interface UnpackBudget {
  bytesLeft: number;
  entriesLeft: number;
}

export interface LayerOutcome {
  /** Device nodes and FIFOs are not made (a sandbox's /dev is its own tmpfs). */
  skipped: number;
}

export class LayerError extends Error {}

const WHITEOUT = '.wh.';
const OPAQUE = '.wh..wh..opq';
const COPY_CHUNK = 1 << 20;

/** sha256 of a file as `sha256:<hex>` (a layer's diff id is that of its uncompressed tar). */
export async function fileDigest(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return `sha256:${h.digest('hex')}`;
}

/**
 * Applies one uncompressed layer (an OCI layer tar) onto `root`, the
 * previous layers' tree: entries replace what is there, `.wh.NAME` removes
 * NAME from below, `.wh..wh..opq` empties its directory of what lower layers
 * put there. The tar is hostile: `..` refuses the layer, symlinks on the way
 * are resolved inside `root` (scoped-path.ts), the last part of a path is
 * never followed (files are made O_EXCL|O_NOFOLLOW after whatever was there
 * is removed), hard links must point inside, device nodes are skipped, and
 * every byte counts against `budget`. Owners and modes (setuid included) are
 * kept as archived: user namespaces map them per sandbox.
 */
export async function applyLayer(root: string, tarPath: string, budget: UnpackBudget): Promise<LayerOutcome> {
  const fh = await open(tarPath, 'r');
  try {
    const total = (await fh.stat()).size;
    const read = async (pos: number, len: number) => {
      const buf = Buffer.alloc(len);
      const { bytesRead } = await fh.read(buf, 0, len, pos);
      return buf.subarray(0, bytesRead);
    };
    const written = new Set<string>();
    let skipped = 0;
    for await (const r of tarEntries(read, total)) {
      if (!r.ok) throw new LayerError(r.error);
      const e = r.value;
      if (--budget.entriesLeft < 0) throw new LayerError('the image has too many files');
      budget.bytesLeft -= e.size;
      if (budget.bytesLeft < 0) throw new LayerError('the image is larger than this server allows (FORKD_IMAGE_MAX_MB)');
      const parts = layerPathParts(e.path);
      if (!parts) throw new LayerError(`a layer entry climbs out of the root: ${JSON.stringify(e.path.slice(0, 200))}`);
      if (parts.length === 0) continue; // the root itself: the volume's own stays
      try {
        if (!(await applyEntry(root, parts, e, fh, written))) skipped++;
      } catch (err) {
        if (err instanceof ScopeError) throw new LayerError(`${JSON.stringify(e.path.slice(0, 200))}: ${err.message}`);
        throw err;
      }
    }
    return { skipped };
  } finally {
    await fh.close();
  }
}

/** False when the entry was skipped (a device node or FIFO). */
async function applyEntry(root: string, parts: string[], e: TarEntry, tar: FileHandle, written: Set<string>): Promise<boolean> {
  const name = parts.at(-1)!;
  const dir = await resolveDirInScope(root, parts.slice(0, -1), true);
  if (name === OPAQUE) {
    for (const child of await readdir(dir)) if (!written.has(join(dir, child))) await rm(join(dir, child), { recursive: true, force: true });
    return true;
  }
  if (name.startsWith(WHITEOUT)) {
    const gone = name.slice(WHITEOUT.length);
    if (gone === '' || gone === '.' || gone === '..') throw new LayerError(`invalid whiteout: ${JSON.stringify(e.path.slice(0, 200))}`);
    await rm(join(dir, gone), { recursive: true, force: true });
    return true;
  }
  if (e.type === 'char' || e.type === 'block' || e.type === 'fifo') return false;
  const target = join(dir, name);
  const existing = await lstat(target).catch(() => undefined);
  if (existing && !(e.type === 'dir' && existing.isDirectory())) await rm(target, { recursive: true, force: true });
  written.add(target);
  switch (e.type) {
    case 'dir':
      if (!existing?.isDirectory()) await mkdir(target);
      await chown(target, e.uid, e.gid);
      await chmod(target, e.mode);
      return true;
    case 'symlink':
      await symlink(e.linkpath, target);
      await lchown(target, e.uid, e.gid);
      await lutimes(target, e.mtime, e.mtime);
      return true;
    case 'hardlink':
      await link(await hardlinkSource(root, e.linkpath), target);
      return true;
    case 'file':
      await writeFile(target, e, tar);
      return true;
  }
}

/** The existing entry a hard link names, inside the root (its last part not followed: links to symlinks stay so). */
async function hardlinkSource(root: string, linkpath: string): Promise<string> {
  const parts = layerPathParts(linkpath);
  if (!parts || parts.length === 0) throw new LayerError(`a hard link points out of the root: ${JSON.stringify(linkpath.slice(0, 200))}`);
  const src = join(await resolveDirInScope(root, parts.slice(0, -1), false), parts.at(-1)!);
  const st = await lstat(src).catch(() => undefined);
  if (!st || st.isDirectory()) throw new LayerError(`a hard link to a missing file or a directory: ${JSON.stringify(linkpath.slice(0, 200))}`);
  return src;
}

async function writeFile(target: string, e: TarEntry, tar: FileHandle): Promise<void> {
  const out = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    const buf = Buffer.alloc(Math.min(COPY_CHUNK, Math.max(e.size, 1)));
    for (let done = 0; done < e.size; ) {
      const { bytesRead } = await tar.read(buf, 0, Math.min(buf.length, e.size - done), e.dataOffset + done);
      if (bytesRead === 0) throw new LayerError('a layer ends inside a file');
      await out.write(buf, 0, bytesRead);
      done += bytesRead;
    }
    // Owner before mode: chown clears setuid and setgid bits.
    await out.chown(e.uid, e.gid);
    await out.chmod(e.mode);
    await out.utimes(e.mtime, e.mtime);
  } finally {
    await out.close();
  }
}
