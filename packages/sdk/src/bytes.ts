const encoder = new TextEncoder();

export function toBytes(data: string | Uint8Array): Uint8Array {
  return typeof data === 'string' ? encoder.encode(data) : data;
}

export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const c of chunks) total += c.byteLength;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** Collects output chunks and decodes them once at the end, so multi-byte characters split across chunks survive. */
export class ByteCollector {
  readonly #chunks: Uint8Array[] = [];

  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
  }

  text(): string {
    return new TextDecoder().decode(concatBytes(this.#chunks));
  }
}

/**
 * Wraps a text callback into a byte callback. The decoder is streaming, so a
 * character split across two chunks is delivered whole with the second one.
 */
export function utf8Chunks(onText: (text: string) => void): (chunk: Uint8Array) => void {
  const decoder = new TextDecoder();
  return (chunk) => {
    const text = decoder.decode(chunk, { stream: true });
    if (text) onText(text);
  };
}

/** Adapts any async iterable of bytes (Node streams included) to a web ReadableStream, pulling on demand. */
export function iterableToStream(source: AsyncIterable<Uint8Array | string>): ReadableStream<Uint8Array> {
  const it = source[Symbol.asyncIterator]();
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      const r = await it.next();
      if (r.done) controller.close();
      else controller.enqueue(toBytes(r.value));
    },
    async cancel(reason) {
      await it.return?.(reason);
    },
  });
}
