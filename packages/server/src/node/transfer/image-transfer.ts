import { createReadStream, createWriteStream } from 'node:fs';
import { lstat, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { BlobStore } from '../../blob/blob-store.js';
import { readChunked, writeChunked, type ChunkedObject } from '../../blob/chunked.js';

export interface ImageObject {
  name: string;
  object: ChunkedObject;
}

/**
 * A snapshot's memory images, one chunked object per file, in name order
 * (so two exports of the same images list the same objects). Only regular
 * files: a restore's leftovers beside them (a page server's socket, `.*`)
 * are not part of the checkpoint. Chunks the store holds already (the
 * previous snapshot's pages of an idle process) are not uploaded again.
 */
export async function uploadImages(blobs: BlobStore, dir: string): Promise<{ images: ImageObject[]; bytesUploaded: number }> {
  const images: ImageObject[] = [];
  let bytesUploaded = 0;
  for (const name of (await readdir(dir)).sort()) {
    if (name.startsWith('.') || !(await lstat(join(dir, name))).isFile()) continue;
    const up = await writeChunked(blobs, createReadStream(join(dir, name), { highWaterMark: 1 << 20 }), { concurrency: 8 });
    images.push({ name, object: up.object });
    bytesUploaded += up.bytesUploaded;
  }
  return { images, bytesUploaded };
}

/**
 * Writes the images into `dir` (made here; it must not exist), each file
 * checked against its sha256 as it is read (readChunked). Names come from a
 * validated manifest: one plain path component each. The files are root's;
 * a restore gives them to the sandbox's id range (see runc-images.ts).
 */
export async function downloadImages(blobs: BlobStore, images: readonly ImageObject[], dir: string): Promise<number> {
  await mkdir(dir, { mode: 0o700 });
  let bytes = 0;
  for (const f of images) {
    await pipeline(Readable.from(readChunked(blobs, f.object)), createWriteStream(join(dir, f.name), { flags: 'wx', mode: 0o600 }));
    bytes += f.object.size;
  }
  return bytes;
}
