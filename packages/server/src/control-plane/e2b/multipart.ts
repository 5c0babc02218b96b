/**
 * A streaming multipart/form-data reader: uploads go to the sandbox part by
 * part as they arrive, never held whole in memory. Each part's body must be
 * read (or is skipped) before the next part is produced.
 */

export interface FormPart {
  name: string;
  filename: string | undefined;
  body: AsyncIterable<Buffer>;
}

export class MultipartError extends Error {}

const MAX_HEADER_BYTES = 16 * 1024;

export function boundaryOf(contentType: string): string | undefined {
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType);
  return m?.[1] ?? m?.[2];
}

class Reader {
  buf: Buffer;
  readonly #it: AsyncIterator<Buffer | Uint8Array | string>;
  eof = false;

  constructor(src: AsyncIterable<Buffer | Uint8Array | string>, prefix: Buffer) {
    this.#it = src[Symbol.asyncIterator]();
    this.buf = prefix;
  }

  async fill(): Promise<boolean> {
    if (this.eof) return false;
    const r = await this.#it.next();
    if (r.done) {
      this.eof = true;
      return false;
    }
    const v = r.value;
    this.buf = Buffer.concat([this.buf, typeof v === 'string' ? Buffer.from(v) : Buffer.from(v.buffer, v.byteOffset, v.byteLength)]);
    return true;
  }

  async need(n: number): Promise<void> {
    while (this.buf.length < n) if (!(await this.fill())) throw new MultipartError('multipart body ends early');
  }
}

function disposition(headers: string): { name: string; filename: string | undefined } {
  const line = headers.split('\r\n').find((l) => /^content-disposition:/i.test(l)) ?? '';
  const param = (k: string) => {
    const m = new RegExp(`;\\s*${k}="((?:[^"\\\\]|\\\\.)*)"`, 'i').exec(line) ?? new RegExp(`;\\s*${k}=([^;\\s]+)`, 'i').exec(line);
    return m?.[1]?.replace(/\\(.)/g, '$1');
  };
  return { name: param('name') ?? '', filename: param('filename') };
}

export async function* multipartParts(src: AsyncIterable<Buffer | Uint8Array | string>, boundary: string): AsyncGenerator<FormPart> {
  // The body's first delimiter has no CRLF before it: one is supplied so every delimiter looks alike.
  const r = new Reader(src, Buffer.from('\r\n'));
  const delim = Buffer.from(`\r\n--${boundary}`);
  // Up to the first delimiter: the preamble, ignored.
  for (;;) {
    const i = r.buf.indexOf(delim);
    if (i >= 0) {
      r.buf = r.buf.subarray(i + delim.length);
      break;
    }
    r.buf = r.buf.subarray(Math.max(0, r.buf.length - delim.length));
    if (!(await r.fill())) throw new MultipartError('no multipart boundary in the body');
  }
  for (;;) {
    await r.need(2);
    if (r.buf[0] === 0x2d && r.buf[1] === 0x2d) return; // "--": the last delimiter
    // Transport padding, then CRLF, then the part's headers up to an empty line.
    let end: number;
    for (;;) {
      end = r.buf.indexOf('\r\n\r\n');
      if (end >= 0) break;
      if (r.buf.length > MAX_HEADER_BYTES) throw new MultipartError('multipart part headers too large');
      if (!(await r.fill())) throw new MultipartError('multipart body ends early');
    }
    const headers = r.buf.subarray(0, end).toString('utf8');
    r.buf = r.buf.subarray(end + 4);
    let done = false;
    const body = async function* (): AsyncGenerator<Buffer> {
      for (;;) {
        const i = r.buf.indexOf(delim);
        if (i >= 0) {
          const chunk = r.buf.subarray(0, i);
          r.buf = r.buf.subarray(i + delim.length);
          done = true;
          if (chunk.length) yield chunk;
          return;
        }
        const keep = delim.length - 1;
        if (r.buf.length > keep) {
          const chunk = r.buf.subarray(0, r.buf.length - keep);
          r.buf = r.buf.subarray(r.buf.length - keep);
          yield chunk;
        }
        if (!(await r.fill())) throw new MultipartError('multipart body ends early');
      }
    };
    const it = body();
    yield { ...disposition(headers), body: it };
    // Whatever the consumer left of the part is skipped.
    if (!done) for await (const _ of it) void _;
  }
}
