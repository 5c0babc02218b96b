import { createHash } from 'node:crypto';

/** Chunk sizes of the content-defined chunker, in bytes. */
export interface CdcParams {
  min: number;
  /** A power of two: the cut test's mask has log2(avg) bits. */
  avg: number;
  max: number;
}

/**
 * min 128 KiB, avg 256 KiB (the cut mask; with the skipped minimum, chunks
 * of random data average ~350 KiB, median ~320 KiB), max 2 MiB. A changed
 * region of a stream costs about one chunk on the next export, and a
 * further export of an idle sandbox should move under 5 MB: the send
 * stream's header chunk plus each dirtied memory area is one chunk, so at
 * this size a dozen scattered changes fit where ~1.5 MiB chunks (the
 * 256 KiB / 1 MiB / 4 MiB FastCDC defaults) would allow three. Smaller
 * still would multiply objects and requests: a 2 GiB memory image is ~6000
 * chunks here, checked with concurrent HEADs in seconds.
 */
export const DEFAULT_CDC: CdcParams = { min: 128 << 10, avg: 256 << 10, max: 2 << 20 };

/**
 * The gear table: 256 fixed pseudo-random 32-bit values. Derived from a
 * constant so every node and every version cuts the same bytes at the same
 * places (a different table would still be correct, but share no chunks
 * with exports made before it).
 */
const GEAR = (() => {
  const table = new Int32Array(256);
  for (let i = 0; i < 256; i += 8) {
    const block = createHash('sha256').update(`forkd-cdc-gear-${i / 8}`).digest();
    for (let j = 0; j < 8; j++) table[i + j] = block.readInt32LE(j * 4);
  }
  return table;
})();

/** `bits` one bits at the top of a 32-bit word: a shift-by-one gear hash's high bits depend on the most bytes. */
function topMask(bits: number): number {
  return bits <= 0 ? 0 : (~0 << (32 - bits)) | 0;
}

/**
 * A FastCDC-style content-defined chunker: a gear rolling hash (32-byte
 * window), no cut before `min`, a harder cut test before `avg` and an easier
 * one after it (normalised chunking, level 1, so sizes cluster at `avg`), a
 * forced cut at `max`. Boundaries depend only on nearby content, so bytes
 * inserted or removed early in a stream shift the cuts after them and the
 * chunks re-synchronise instead of all changing. Push bytes in any pieces;
 * the chunks are the same.
 */
export class Chunker {
  private readonly maskS: number;
  private readonly maskL: number;
  private buf: Uint8Array;
  private len = 0;
  private hash = 0;

  constructor(private readonly p: CdcParams = DEFAULT_CDC) {
    const bits = Math.round(Math.log2(p.avg));
    if (!(p.min >= 64 && p.min <= p.avg && p.avg <= p.max) || 2 ** bits !== p.avg) throw new Error('chunker: need 64 ≤ min ≤ avg ≤ max, avg a power of two');
    this.maskS = topMask(bits + 1);
    this.maskL = topMask(bits - 1);
    this.buf = new Uint8Array(p.max);
  }

  /** The chunks completed by `data` (each a fresh copy). */
  push(data: Uint8Array): Uint8Array[] {
    const out: Uint8Array[] = [];
    let at = 0;
    while (at < data.length) {
      const cut = this.scan(data, at);
      if (cut >= 0 && this.len === 0) {
        // The whole chunk is in `data`: one copy, not two through buf (a copy: Buffer's slice would be a view).
        out.push(new Uint8Array(data.subarray(at, cut)));
        this.hash = 0;
        at = cut;
        continue;
      }
      const end = cut < 0 ? data.length : cut;
      this.buf.set(data.subarray(at, end), this.len);
      this.len += end - at;
      at = end;
      if (cut >= 0) out.push(this.take());
    }
    return out;
  }

  /** The last chunk, if any bytes are left. */
  end(): Uint8Array | undefined {
    return this.len > 0 ? this.take() : undefined;
  }

  /** Where in `data` (from `at`) the current chunk ends, or -1 when it goes on past `data`. */
  private scan(data: Uint8Array, at: number): number {
    const { min, avg, max } = this.p;
    const n = data.length;
    // data[i] is byte `base + i` of the current chunk; bytes before `min` are not hashed.
    const base = this.len - at;
    let i = Math.max(at, min - base);
    let h = this.hash;
    for (const end = Math.min(n, avg - base); i < end; i++) {
      h = ((h << 1) + GEAR[data[i]!]!) | 0;
      if ((h & this.maskS) === 0) return i + 1;
    }
    const end = Math.min(n, max - base);
    for (; i < end; i++) {
      h = ((h << 1) + GEAR[data[i]!]!) | 0;
      if ((h & this.maskL) === 0) return i + 1;
    }
    if (end === max - base) return end;
    this.hash = h;
    return -1;
  }

  private take(): Uint8Array {
    const chunk = this.buf.slice(0, this.len);
    this.len = 0;
    this.hash = 0;
    return chunk;
  }
}
