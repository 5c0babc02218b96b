import { constants, createWriteStream } from 'node:fs';
import { chmod, copyFile, lstat, mkdir, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../../blob/blob-store.js';
import { assertChunkList, readChunked, readChunks, type ChunkedObject } from '../../blob/chunked.js';
import type { ChunkRef } from '../../blob/chunk-writer.js';
import { writeChunkedFile } from '../../blob/chunked-file.js';
import type { Logger } from '../../shared/logger.js';
import { sharedRanges, type ByteRanges } from '../storage/shared-ranges.js';

export interface ImageObject {
  name: string;
  object: ChunkedObject;
}

/** Below this, comparing the bytes costs less than running the tool that reads extents (the pages images are far above it). */
const ASK_EXTENTS_FROM = 4 << 20;

/** An exported snapshot's images, still on this node: what a later export compares its own with. */
export interface ImagesReference {
  dir: string;
  images: readonly ImageObject[];
}

/**
 * A snapshot's memory images, one chunked object per file, in name order
 * (so two exports of the same images list the same objects). Only regular
 * files: a restore's leftovers beside them (a page server's socket, `.*`)
 * are not part of the checkpoint. Chunks the store holds already (the
 * previous snapshot's pages of an idle process) are not uploaded again;
 * with a reference, the pages an image shares with its namesake there are
 * not even hashed (writeChunkedFile), nor read where the two share extents
 * (forkd-patch leaves unchanged pages shared with the previous snapshot's).
 */
export async function uploadImages(blobs: BlobStore, dir: string, reference?: ImagesReference, logger?: Logger): Promise<{ images: ImageObject[]; bytesUploaded: number }> {
  const images: ImageObject[] = [];
  let bytesUploaded = 0;
  for (const name of (await readdir(dir)).sort()) {
    const st = await lstat(join(dir, name));
    if (name.startsWith('.') || !st.isFile()) continue;
    const ref = reference?.images.find((i) => i.name === name);
    const refPath = reference && join(reference.dir, name);
    const shared = ref && refPath && st.size >= ASK_EXTENTS_FROM ? await sharedOrNone(join(dir, name), refPath, logger) : [];
    const up = await writeChunkedFile(blobs, join(dir, name), { concurrency: 8, reference: ref && refPath ? { path: refPath, object: ref.object, shared } : undefined });
    images.push({ name, object: up.object });
    bytesUploaded += up.bytesUploaded;
  }
  return { images, bytesUploaded };
}

/** Ranges the files share on disk; none (they are compared byte for byte instead) when the tool fails. */
async function sharedOrNone(a: string, b: string, logger: Logger | undefined): Promise<ByteRanges> {
  try {
    return await sharedRanges(a, b);
  } catch (err) {
    logger?.warn('forkd-shared-ranges failed; the images are compared instead', { file: a, error: String(err) });
    return [];
  }
}

/**
 * Writes the images into `dir` (made here; it must not exist), each file
 * checked against its sha256 as it is read (readChunked). Names come from a
 * validated manifest: one plain path component each. The files are root's;
 * a restore gives them to the sandbox's id range (see runc-images.ts). With
 * a reference (an earlier snapshot of the same sandbox on this node), an
 * image starts as a reflink of its namesake there and only the chunks that
 * are not the same chunk at the same offset are fetched and written.
 */
export async function downloadImages(blobs: BlobStore, images: readonly ImageObject[], dir: string, reference?: ImagesReference): Promise<number> {
  await mkdir(dir, { mode: 0o700 });
  let bytes = 0;
  for (const f of images) {
    const ref = reference?.images.find((i) => i.name === f.name);
    const path = join(dir, f.name);
    if (!ref || !reference || !(await reflinkNew(join(reference.dir, f.name), path))) {
      await pipeline(Readable.from(readChunked(blobs, f.object)), createWriteStream(path, { flags: 'wx', mode: 0o600 }));
    } else {
      await patchFromStore(blobs, f.object, ref.object, path);
    }
    bytes += f.object.size;
  }
  return bytes;
}

/** A new file at `to` sharing `from`'s extents, mode 0600; false when the copy cannot be a reflink (nothing left at `to`). */
async function reflinkNew(from: string, to: string): Promise<boolean> {
  try {
    await copyFile(from, to, constants.COPYFILE_FICLONE_FORCE | constants.COPYFILE_EXCL);
    await chmod(to, 0o600);
    return true;
  } catch {
    await rm(to, { force: true });
    return false;
  }
}

/**
 * Makes `path`, which holds the reference's bytes, hold `obj`'s: chunks of
 * obj that the reference has at the same offset are there already; the rest
 * are fetched (checked as readChunked checks them) and written in place,
 * then the file is cut to obj's size.
 */
async function patchFromStore(blobs: BlobStore, obj: ChunkedObject, ref: ChunkedObject, path: string): Promise<void> {
  assertChunkList(obj);
  const there = new Set<string>();
  let at = 0;
  for (const c of ref.chunks) {
    there.add(`${at} ${c.sha256} ${c.size}`);
    at += c.size;
  }
  const missing: Array<{ chunk: ChunkRef; offset: number }> = [];
  at = 0;
  for (const c of obj.chunks) {
    if (!there.has(`${at} ${c.sha256} ${c.size}`)) missing.push({ chunk: c, offset: at });
    at += c.size;
  }
  const fh = await open(path, 'r+');
  try {
    let i = 0;
    for await (const data of readChunks(blobs, missing.map((m) => m.chunk))) await writeAll(fh, data, missing[i++]!.offset);
    await fh.truncate(obj.size);
  } finally {
    await fh.close();
  }
}

async function writeAll(fh: FileHandle, data: Uint8Array, offset: number): Promise<void> {
  for (let done = 0; done < data.length; ) {
    const { bytesWritten } = await fh.write(data, done, data.length - done, offset + done);
    done += bytesWritten;
  }
}
