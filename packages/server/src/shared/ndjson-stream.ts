/**
 * A pull-driven NDJSON response body, for the API's streams and the node's
 * (shared: neither side imports the other). `write` resolves only when the
 * reader has room, so a slow reader slows the producer (a process's output,
 * back to the guest) instead of growing memory. `onCancel` runs once when
 * the reader goes away (the client aborted the request).
 */
export function ndjsonStream(onCancel: () => void): { stream: ReadableStream<Uint8Array>; write(obj: unknown): Promise<void>; close(): void; abandon(): void } {
  const enc = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let waiting: (() => void) | undefined;
  let closed = false;
  const abandon = () => {
    if (closed) return;
    closed = true;
    waiting?.();
    onCancel();
  };
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
      },
      pull() {
        waiting?.();
        waiting = undefined;
      },
      cancel() {
        abandon();
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
  return {
    stream,
    async write(obj) {
      if (closed) return;
      controller.enqueue(enc.encode(JSON.stringify(obj) + '\n'));
      if ((controller.desiredSize ?? 1) <= 0) await new Promise<void>((r) => (waiting = r));
    },
    close() {
      if (closed) return;
      closed = true;
      controller.close();
    },
    /** As if the reader went away: for a connection that closed before the stream was handed to it. */
    abandon,
  };
}

export const NDJSON_HEADERS = { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' } as const;
