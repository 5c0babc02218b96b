import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ForkdError, fromErrorBody } from '@forkd/protocol';
import { NODE_PREFIX } from './node-wire.js';

export interface NodeEndpoint {
  /** The node's base URL, e.g. `http://10.0.0.5:8081` (what `forkd serve --role node` logs). */
  url: string;
  /** The node's token (its `<stateDir>/node.token`). */
  token: string;
}

export interface RequestOptions {
  json?: unknown;
  body?: Uint8Array | AsyncIterable<Uint8Array>;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

/**
 * Requests to one node: node:http rather than fetch, for streams that stay
 * quiet for hours (fetch's body timeout would cut them), request bodies
 * streamed as they come, and port upgrades. Failures to reach the node are
 * UNAVAILABLE; the node's own error answers become the ForkdError it sent.
 */
export class NodeTransport {
  readonly #base: URL;
  readonly #token: string;
  readonly #agent: http.Agent;
  readonly #mod: typeof http | typeof https;

  constructor({ url, token }: NodeEndpoint) {
    this.#base = new URL(url);
    this.#token = token;
    this.#mod = this.#base.protocol === 'https:' ? https : http;
    this.#agent = new this.#mod.Agent({ keepAlive: true });
  }

  get url(): string {
    return this.#base.origin;
  }

  /** node:http options of a request to `path` under the prefix. */
  options(method: string, path: string, query?: RequestOptions['query'], headers: Record<string, string> = {}): http.RequestOptions {
    const qs = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) qs.set(k, String(v));
    const q = qs.toString();
    return {
      protocol: this.#base.protocol,
      hostname: this.#base.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: this.#base.port,
      method,
      path: `${this.#base.pathname.replace(/\/$/, '')}${NODE_PREFIX}${path}${q ? `?${q}` : ''}`,
      headers: { authorization: `Bearer ${this.#token}`, ...headers },
      agent: this.#agent,
    };
  }

  module(): typeof http | typeof https {
    return this.#mod;
  }

  /** Resolves with the response once its head arrived (any status). */
  request(method: string, path: string, o: RequestOptions = {}): Promise<IncomingMessage> {
    const headers: Record<string, string> = { ...o.headers };
    let payload: Uint8Array | AsyncIterable<Uint8Array> | undefined = o.body;
    if (o.json !== undefined) {
      payload = Buffer.from(JSON.stringify(o.json));
      headers['content-type'] = 'application/json';
    } else if (payload !== undefined) headers['content-type'] = 'application/octet-stream';
    if (payload instanceof Uint8Array) headers['content-length'] = String(payload.byteLength);
    return new Promise((resolve, reject) => {
      const req = this.#mod.request({ ...this.options(method, path, o.query, headers), ...(o.signal ? { signal: o.signal } : {}) }, resolve);
      req.on('error', (err) => reject(this.unavailable(err)));
      if (payload === undefined) req.end();
      else if (payload instanceof Uint8Array) req.end(payload);
      // The node may answer (an error) before it read everything: the rest is not sent.
      else pipeline(Readable.from(payload), req).catch((err: unknown) => req.destroy(err as Error));
    });
  }

  /** A unary call: the JSON answer (undefined for 204), or the node's error thrown. */
  async call<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const res = await this.request(method, path, o);
    if (!ok(res)) throw await this.failure(res);
    const text = await readText(res);
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** The ForkdError an error answer carries. */
  async failure(res: IncomingMessage): Promise<ForkdError> {
    const text = await readText(res).catch(() => '');
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    return fromErrorBody(body, res.statusCode ?? 0);
  }

  unavailable(err: unknown): ForkdError {
    if (err instanceof ForkdError) return err;
    if ((err as Error).name === 'AbortError') return new ForkdError('CANCELLED', 'the call to the node was cancelled', undefined, { cause: err });
    return new ForkdError('UNAVAILABLE', `node ${this.#base.origin} unreachable: ${(err as Error).message}`, undefined, { cause: err });
  }

  close(): void {
    this.#agent.destroy();
  }
}

export function ok(res: IncomingMessage): boolean {
  const s = res.statusCode ?? 0;
  return s >= 200 && s < 300;
}

async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of res) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** The lines of an NDJSON answer, parsed; the reader's pace is the stream's (back-pressure). */
export async function* ndjsonLines<T>(res: IncomingMessage): AsyncGenerator<T> {
  let rest = '';
  // Decoded as a stream: a character split between two chunks stays whole.
  res.setEncoding('utf8');
  for await (const chunk of res) {
    rest += chunk as string;
    let nl: number;
    while ((nl = rest.indexOf('\n')) >= 0) {
      const line = rest.slice(0, nl);
      rest = rest.slice(nl + 1);
      if (line.trim()) yield JSON.parse(line) as T;
    }
  }
  if (rest.trim()) yield JSON.parse(rest) as T;
}
