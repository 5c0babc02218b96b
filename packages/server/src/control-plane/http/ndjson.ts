/**
 * A pull-driven NDJSON response body. `write` resolves only when the client
 * has room, so a slow reader slows the producer instead of growing memory.
 */
export function ndjsonStream(onCancel: () => void): { stream: ReadableStream<Uint8Array>; write(obj: unknown): Promise<void>; close(): void } {
  const enc = new TextEncoder();
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let waiting: (() => void) | undefined;
  let closed = false;
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
        closed = true;
        waiting?.();
        onCancel();
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
  };
}
