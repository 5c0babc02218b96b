/** Per stream and call: what a tool answer may carry of a command's output or a file (a model's context is small). */
export const OUTPUT_CAP_BYTES = 64 * 1024;

export interface CutText {
  text: string;
  /** Bytes left out; 0 when nothing was. */
  cutBytes: number;
}

/**
 * The first `cap` bytes of a byte stream, as UTF-8 text cut on a character
 * boundary; the rest is only counted, never held (a command's output may be
 * far larger than what the tool answer may carry).
 */
export class BoundedText {
  readonly #cap: number;
  readonly #kept: Uint8Array[] = [];
  #keptBytes = 0;
  #totalBytes = 0;

  constructor(cap: number = OUTPUT_CAP_BYTES) {
    this.#cap = cap;
  }

  push(chunk: Uint8Array): void {
    this.#totalBytes += chunk.length;
    const room = this.#cap - this.#keptBytes;
    if (room <= 0) return;
    const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
    this.#kept.push(part);
    this.#keptBytes += part.length;
  }

  result(): CutText {
    const bytes = Buffer.concat(this.#kept);
    let end = bytes.length;
    if (this.#totalBytes > end) {
      // Cut inside a character: back off over its continuation bytes (10xxxxxx) and drop its lead byte too.
      let i = end;
      while (i > 0 && ((bytes[i - 1] ?? 0) & 0xc0) === 0x80) i--;
      const lead = bytes[i - 1] ?? 0;
      const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
      if (i > 0 && end - (i - 1) < need) end = i - 1;
    }
    return { text: bytes.subarray(0, end).toString('utf8'), cutBytes: this.#totalBytes - end };
  }
}

/** `text` cut to `cap` bytes of UTF-8 on a character boundary. */
export function cutUtf8(text: string, cap: number = OUTPUT_CAP_BYTES): CutText {
  const b = new BoundedText(cap);
  b.push(Buffer.from(text, 'utf8'));
  return b.result();
}

/** The note appended to a cut text, so the model knows it saw only part and how to see the rest. */
export function cutNote(what: string, cutBytes: number): string {
  return `\n[forkd: ${what} cut: ${cutBytes} more bytes not shown; write it to a file and look at parts of it (head, tail, grep, sed -n)]`;
}
