import { createReadStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import type { ChunkRef, ChunkWriter } from './chunk-writer.js';
import { writeChunked, writerFor, written, type ChunkedWrite, type WriteChunkedOptions } from './chunked.js';
import type { ChunkedObject } from './chunked-object.js';
import { Chunker, DEFAULT_CDC, type CdcParams } from './cdc.js';

/** An earlier version of a file and the chunked object it was stored as. */
export interface ChunkReference {
  path: string;
  object: ChunkedObject;
  /** [start, length) ranges, ascending, where the two files are known to hold the same bytes (shared on disk): not read there. */
  shared?: ReadonlyArray<readonly [number, number]>;
}

const PIECE = 1 << 20;

/**
 * A file stored as writeChunked stores it, without hashing what it shares
 * with a reference (the memory images of the sandbox's last exported
 * snapshot, which an idle process repeats page for page): wherever a chunk
 * of the reference starts at the same offset and the file holds the same
 * bytes there (a memcmp, ~20× cheaper than the gear hash and sha256), that
 * chunk is listed as it is; elsewhere the content-defined chunker runs
 * until one of its cuts lands where a reference chunk starts. A cut
 * depends only on the bytes since the previous cut, so the chunks are the
 * ones a plain writeChunked would make wherever the two files agree.
 */
export async function writeChunkedFile(store: Parameters<typeof writeChunked>[0], path: string, opts: WriteChunkedOptions & { reference?: ChunkReference | undefined } = {}): Promise<ChunkedWrite> {
  const ref = opts.reference;
  if (!ref) return writeChunked(store, createReadStream(path, { highWaterMark: PIECE }), opts);
  const w = writerFor(store, opts);
  const starts = new Map<number, ChunkRef>();
  let at = 0;
  for (const c of ref.object.chunks) {
    starts.set(at, c);
    at += c.size;
  }
  const last = ref.object.chunks.at(-1);
  const fh = await open(path, 'r');
  try {
    const rh = await open(ref.path, 'r');
    try {
      const size = (await fh.stat()).size;
      const known = coverage(ref.shared ?? []);
      let pos = 0;
      while (pos < size) {
        const c = starts.get(pos);
        // The reference's last chunk ended where its file did, not at a cut of the chunker's.
        if (c && pos + c.size <= size && (c !== last || pos + c.size === size) && (known(pos, c.size) || (await sameBytes(fh, rh, pos, c.size)))) {
          await w.addKnown(c);
          pos += c.size;
        } else {
          pos = await chunkUntilResync(fh, w, pos, size, starts, opts.cdc ?? DEFAULT_CDC);
        }
      }
    } finally {
      await rh.close();
    }
  } finally {
    await w.finish().catch(() => {});
    await fh.close();
  }
  return written(w);
}

/** Whether [pos, pos+len) lies in one of the ranges; asked with ascending `pos`. */
function coverage(ranges: ReadonlyArray<readonly [number, number]>): (pos: number, len: number) => boolean {
  let i = 0;
  return (pos, len) => {
    while (i < ranges.length && ranges[i]![0] + ranges[i]![1] <= pos) i++;
    const r = ranges[i];
    return !!r && r[0] <= pos && pos + len <= r[0] + r[1];
  };
}

async function sameBytes(a: FileHandle, b: FileHandle, pos: number, len: number): Promise<boolean> {
  const [x, y] = await Promise.all([readExactly(a, pos, len), readExactly(b, pos, len)]);
  return x !== undefined && y !== undefined && Buffer.compare(x, y) === 0;
}

/** `len` bytes at `pos`, or undefined when the file ends first. */
async function readExactly(fh: FileHandle, pos: number, len: number): Promise<Buffer | undefined> {
  const buf = Buffer.allocUnsafe(len);
  let got = 0;
  while (got < len) {
    const { bytesRead } = await fh.read(buf, got, len - got, pos + got);
    if (bytesRead === 0) return undefined;
    got += bytesRead;
  }
  return buf;
}

function describePath(fh: FileHandle): string {
  return `file descriptor ${fh.fd}`;
}

/** Chunks from `pos` (a cut) until a cut lands on a reference chunk's start or the file ends; returns where it stopped. */
async function chunkUntilResync(fh: FileHandle, w: ChunkWriter, pos: number, size: number, starts: Map<number, ChunkRef>, cdc: CdcParams): Promise<number> {
  const chunker = new Chunker(cdc);
  const buf = Buffer.allocUnsafe(PIECE);
  let cut = pos;
  for (let read = pos; read < size; ) {
    const { bytesRead } = await fh.read(buf, 0, Math.min(PIECE, size - read), read);
    if (bytesRead === 0) throw new Error(`${describePath(fh)} ended while it was read`);
    read += bytesRead;
    for (const c of chunker.push(buf.subarray(0, bytesRead))) {
      await w.add(c);
      cut += c.length;
      // The chunker's later chunks of this piece are dropped: the reference takes over here.
      if (starts.has(cut)) return cut;
    }
  }
  const last = chunker.end();
  if (last) {
    await w.add(last);
    cut += last.length;
  }
  return cut;
}
