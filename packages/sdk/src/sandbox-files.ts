import { ForkdError } from '@forkd/protocol/errors';
import type { FileEntry, WatchEvent } from '@forkd/protocol';
import { iterableToStream, toBytes } from './bytes.js';
import type { HttpTransport } from './http-transport.js';
import { readNdjson } from './ndjson.js';
import type { FileData, WriteFileOptions } from './types.js';

export interface Watcher {
  /** Stops watching. */
  close(): void;
  /** Settles when the watch ends: resolves after close(), rejects if the connection fails. */
  readonly done: Promise<void>;
}

/** The files of one sandbox. Paths are resolved inside the sandbox's own root. */
export class SandboxFiles {
  readonly #http: HttpTransport;
  readonly #base: string;

  constructor(http: HttpTransport, sandboxId: string) {
    this.#http = http;
    this.#base = `/v1/sandboxes/${encodeURIComponent(sandboxId)}/files`;
  }

  async read(path: string): Promise<Uint8Array> {
    const res = await this.#http.request('GET', this.#base, { query: { path }, streaming: true });
    return new Uint8Array(await res.arrayBuffer());
  }

  async readText(path: string): Promise<string> {
    return new TextDecoder().decode(await this.read(path));
  }

  /** The file's bytes as they arrive; nothing is buffered whole. */
  async readStream(path: string, opts: { abortSignal?: AbortSignal } = {}): Promise<ReadableStream<Uint8Array>> {
    const res = await this.#http.request('GET', this.#base, { query: { path }, streaming: true, signal: opts.abortSignal });
    return res.body ?? new ReadableStream({ start: (c) => c.close() });
  }

  /** Creates or replaces a file (parents are created). Streams and iterables are uploaded as they are produced. */
  async write(path: string, data: FileData, opts: WriteFileOptions = {}): Promise<{ path: string; size: number }> {
    const body = typeof data === 'string' || data instanceof Uint8Array ? toBytes(data) : data instanceof ReadableStream ? data : iterableToStream(data);
    return this.#http.json('PUT', this.#base, {
      query: {
        path,
        mode: opts.mode,
        append: opts.append ? 'true' : undefined,
        user: opts.user,
        metadata: opts.metadata ? JSON.stringify(opts.metadata) : undefined,
        metadataScope: opts.metadata ? opts.metadataScope : undefined,
      },
      body,
      signal: opts.abortSignal,
    });
  }

  async list(path: string, opts: { depth?: number } = {}): Promise<FileEntry[]> {
    const r = await this.#http.json<{ entries: FileEntry[] }>('GET', `${this.#base}/list`, { query: { path, depth: opts.depth } });
    return r.entries;
  }

  stat(path: string): Promise<FileEntry> {
    return this.#http.json('GET', `${this.#base}/stat`, { query: { path } });
  }

  async exists(path: string): Promise<boolean> {
    try {
      await this.stat(path);
      return true;
    } catch (err) {
      if (err instanceof ForkdError && err.code === 'NOT_FOUND') return false;
      throw err;
    }
  }

  /** Like `mkdir -p`. */
  mkdir(path: string, opts: { user?: string } = {}): Promise<void> {
    return this.#http.send('POST', `${this.#base}/mkdir`, { json: { path, ...(opts.user ? { user: opts.user } : {}) } });
  }

  move(from: string, to: string): Promise<void> {
    return this.#http.send('POST', `${this.#base}/move`, { json: { from, to } });
  }

  remove(path: string, opts: { recursive?: boolean } = {}): Promise<void> {
    return this.#http.send('DELETE', this.#base, { query: { path, recursive: opts.recursive ? 'true' : undefined } });
  }

  /** Resolves once the watch is established, so changes made afterwards are seen. */
  async watch(path: string, onEvent: (event: WatchEvent) => void, opts: { recursive?: boolean } = {}): Promise<Watcher> {
    const abort = new AbortController();
    const res = await this.#http.request('GET', `${this.#base}/watch`, {
      query: { path, recursive: opts.recursive ? 'true' : undefined },
      signal: abort.signal,
      streaming: true,
    });
    const done = (async () => {
      try {
        for await (const e of readNdjson(res.body!)) onEvent(e as WatchEvent);
      } catch (err) {
        if (!abort.signal.aborted) throw err;
      }
    })();
    done.catch(() => {});
    return { close: () => abort.abort(), done };
  }
}
