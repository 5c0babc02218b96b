import { ERROR_CODES, ForkdError, fromErrorBody, isErrorCode, type ErrorCode } from '@forkd/protocol/errors';
import { TENANT_HEADER } from '@forkd/protocol/tenant-header';
import { patientDispatcher } from './patient-dispatcher.js';
import { DEFAULT_RECONNECT_MS } from './resume.js';
import { describeCause } from './wire-error.js';
import type { FetchLike, WireRequestInit, WireResponse } from './fetch-like.js';

export type QueryValue = string | number | boolean | undefined;

export interface RequestOptions {
  query?: Record<string, QueryValue>;
  /** Sent as a JSON body. */
  json?: unknown;
  /** Sent raw (application/octet-stream); a stream is uploaded as it is produced. */
  body?: Uint8Array | ReadableStream<Uint8Array> | string;
  signal?: AbortSignal | undefined;
  /** The answer is a long-lived stream (NDJSON, big download): no idle timeout on its body. */
  streaming?: boolean;
}

export interface TransportOptions {
  url: string;
  apiKey?: string | undefined;
  /** An admin key's calls made as this tenant (TENANT_HEADER). */
  tenant?: string | undefined;
  fetch?: FetchLike | undefined;
  /** How long a process stream whose connection went keeps trying to resume (ms; 0: never). Default 60 s. */
  reconnectTimeoutMs?: number | undefined;
}

/** The one place that talks HTTP: URLs, auth, and turning every failure into a ForkdError. */
export class HttpTransport {
  readonly baseUrl: string;
  readonly apiKey: string | undefined;
  readonly tenant: string | undefined;
  readonly reconnectTimeoutMs: number;
  readonly #fetch: FetchLike;
  readonly #customFetch: boolean;

  constructor(opts: TransportOptions) {
    // `host:port` alone is common in env vars; http is the default scheme.
    const url = /^[a-z][a-z0-9+.-]*:\/\//i.test(opts.url) ? opts.url : `http://${opts.url}`;
    if (!URL.canParse(url)) throw new ForkdError('INVALID_ARGUMENT', `invalid forkd URL ${JSON.stringify(opts.url)}`);
    this.baseUrl = url.replace(/\/+$/, '');
    this.apiKey = opts.apiKey || undefined;
    this.tenant = opts.tenant || undefined;
    this.reconnectTimeoutMs = opts.reconnectTimeoutMs ?? DEFAULT_RECONNECT_MS;
    this.#customFetch = opts.fetch !== undefined;
    this.#fetch = opts.fetch ?? ((input, init) => globalThis.fetch(input, init as RequestInit));
  }

  url(path: string, query?: Record<string, QueryValue>): string {
    const u = new URL(this.baseUrl + path);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) u.searchParams.set(k, String(v));
    return u.toString();
  }

  /** ws:// or wss:// URL of a path, for the interactive stream. */
  wsUrl(path: string): string {
    return this.url(path).replace(/^http/, 'ws');
  }

  authHeaders(): Record<string, string> {
    return { ...(this.apiKey ? { authorization: `Bearer ${this.apiKey}` } : {}), ...(this.tenant ? { [TENANT_HEADER]: this.tenant } : {}) };
  }

  /** Sends a request; resolves only for 2xx answers, whose body is left to the caller. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<WireResponse> {
    const headers: Record<string, string> = { accept: 'application/json', ...this.authHeaders() };
    const init: WireRequestInit = { method, headers };
    if (opts.signal) init.signal = opts.signal;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(opts.json);
    } else if (opts.body !== undefined) {
      headers['content-type'] = 'application/octet-stream';
      init.body = opts.body;
      if (opts.body instanceof ReadableStream) {
        init.duplex = 'half';
        // A stream body cannot be replayed for a redirect anyway, and with redirects allowed
        // undici tees it and keeps the unread branch: a 1 GB upload would sit in memory.
        init.redirect = 'error';
      }
    }
    if (opts.streaming && !this.#customFetch) {
      // undici's extension of RequestInit, for the global fetch only.
      const dispatcher = await patientDispatcher();
      if (dispatcher) Object.assign(init, { dispatcher });
    }
    let res: WireResponse;
    try {
      res = await this.#fetch(this.url(path, opts.query), init);
    } catch (err) {
      throw this.#networkError(err, opts.signal);
    }
    if (!res.ok) throw await errorFromResponse(res);
    return res;
  }

  async json<T>(method: string, path: string, opts?: RequestOptions): Promise<T> {
    const res = await this.request(method, path, opts);
    try {
      return (await res.json()) as T;
    } catch (err) {
      throw new ForkdError('INTERNAL', `invalid JSON answer to ${method} ${path}`, undefined, { cause: err });
    }
  }

  /** For answers without a body worth reading (204s); drains it so the connection is reused. */
  async send(method: string, path: string, opts?: RequestOptions): Promise<void> {
    const res = await this.request(method, path, opts);
    await res.arrayBuffer().catch(() => {});
  }

  #networkError(err: unknown, signal: AbortSignal | undefined): ForkdError {
    if (err instanceof ForkdError) return err;
    if (signal?.aborted || (err as { name?: string } | null)?.name === 'AbortError') {
      return new ForkdError('CANCELLED', 'request aborted', undefined, { cause: err });
    }
    return new ForkdError('UNAVAILABLE', `cannot reach forkd at ${this.baseUrl}: ${describeCause(err)}`, undefined, { cause: err });
  }
}

/** Rebuilds the server's ForkdError; a body that is not ours (a proxy's page) is mapped by status. */
export async function errorFromResponse(res: WireResponse): Promise<ForkdError> {
  const text = await res.text().catch(() => '');
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: handled below
  }
  const e = (body as { error?: { code?: unknown } } | null)?.error;
  const requestId = res.headers.get('x-request-id') ?? undefined;
  if (e && isErrorCode(e.code)) {
    const fe = fromErrorBody(body, res.status);
    return fe.requestId || !requestId ? fe : new ForkdError(fe.code, fe.message, fe.details, { requestId });
  }
  const code = codeForStatus(res.status);
  const snippet = text.trim().slice(0, 200);
  return new ForkdError(code, `unexpected response (HTTP ${res.status})${snippet ? `: ${snippet}` : ''}`, undefined, { requestId });
}

function codeForStatus(status: number): ErrorCode {
  if (status === 502) return 'UNAVAILABLE';
  for (const [code, s] of Object.entries(ERROR_CODES)) if (s === status) return code as ErrorCode;
  return status >= 500 ? 'INTERNAL' : 'INVALID_ARGUMENT';
}
