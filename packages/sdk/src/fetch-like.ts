/**
 * What the SDK needs of `fetch` and of its answer, so a caller can bring a
 * lighter one (the CLI's over node:http: the global fetch costs a short-lived
 * process tens of milliseconds of set-up). The global `fetch` and `Response` fit.
 */
export interface WireResponse {
  readonly ok: boolean;
  readonly status: number;
  readonly headers: { get(name: string): string | null };
  readonly body: ReadableStream<Uint8Array> | null;
  json(): Promise<unknown>;
  text(): Promise<string>;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/** The request side: what HttpTransport passes (`duplex`: a streamed upload). */
export interface WireRequestInit {
  method: string;
  headers: Record<string, string>;
  body?: string | Uint8Array | ReadableStream<Uint8Array>;
  signal?: AbortSignal;
  redirect?: 'error' | 'follow';
  duplex?: 'half';
}

export type FetchLike = (url: string, init: WireRequestInit) => Promise<WireResponse>;
