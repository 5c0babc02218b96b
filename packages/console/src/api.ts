import { ForkdError, fromErrorBody } from './vendor/errors.js';

/** The part of `fetch` the client uses (a fake in unit tests). */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

export interface RequestOptions {
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as bytes (an upload). */
  body?: Blob | ArrayBuffer | Uint8Array;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
}

/** `path?k=v…`, leaving out absent values. */
export function withQuery(path: string, query: RequestOptions['query']): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** A failed answer as forkd's one error type: the body's code and message when it has them, else the status's. */
export async function responseError(res: Response): Promise<ForkdError> {
  const body: unknown = await res.json().catch(() => undefined);
  const err = fromErrorBody(body, res.status);
  if (body === undefined && res.status === 401) return new ForkdError('UNAUTHENTICATED', 'the API key was refused');
  return err;
}

/**
 * The console's one way to the API: the same paths, the key as the SDK sends
 * it (`Authorization: Bearer`), errors as `ForkdError`. The key's tenant
 * scopes every answer, exactly as for any other client.
 */
export class ApiClient {
  readonly #key: string;
  readonly #fetch: FetchLike;
  readonly #origin: string;

  constructor(key: string, fetchFn: FetchLike = (u, i) => fetch(u, i), origin = '') {
    this.#key = key;
    this.#fetch = fetchFn;
    this.#origin = origin;
  }

  /** Sends a request; resolves only for 2xx answers. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { accept: 'application/json', authorization: `Bearer ${this.#key}` };
    const init: RequestInit = { method, headers, cache: 'no-store' };
    if (opts.signal) init.signal = opts.signal;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(opts.json);
    } else if (opts.body !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      init.body = opts.body as BodyInit;
    }
    let res: Response;
    try {
      res = await this.#fetch(this.#origin + withQuery(path, opts.query), init);
    } catch (err) {
      if ((err as { name?: string } | null)?.name === 'AbortError') throw new ForkdError('CANCELLED', 'request aborted');
      throw new ForkdError('UNAVAILABLE', 'cannot reach forkd (is it running?)', undefined, { cause: err });
    }
    if (!res.ok) throw await responseError(res);
    return res;
  }

  async json<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, path, opts);
    if (res.status === 204) return undefined as T;
    return (await res.json()) as T;
  }

  get<T>(path: string, query?: RequestOptions['query'], signal?: AbortSignal): Promise<T> {
    return this.json<T>('GET', path, { ...(query ? { query } : {}), ...(signal ? { signal } : {}) });
  }

  post<T>(path: string, json: unknown = {}): Promise<T> {
    return this.json<T>('POST', path, { json });
  }

  async delete(path: string, query?: RequestOptions['query']): Promise<void> {
    await this.request('DELETE', path, query ? { query } : {});
  }

  /** Whether the key starts with `prefix` (a KeyInfo's shown prefix), without handing the key out. */
  keyHasPrefix(prefix: string): boolean {
    return prefix.length > 0 && this.#key.startsWith(prefix);
  }

  /**
   * A WebSocket URL of the API. Browsers cannot set headers on a WebSocket,
   * so the key goes as `?api_key=`, which the server accepts on upgrades only.
   */
  socketUrl(path: string, location: { protocol: string; host: string }): string {
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    return `${scheme}//${location.host}${withQuery(path, { api_key: this.#key })}`;
  }
}
