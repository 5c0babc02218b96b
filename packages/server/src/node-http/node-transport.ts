import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ForkdError, fromErrorBody } from '@forkd/protocol';
import { NODE_PREFIX } from './node-wire.js';
import { currentContext, NODE_REQUEST_ID_HEADER } from '../shared/request-context.js';
import { CallDeadline, DEFAULT_NODE_CALL_TIMEOUTS, timeoutOf, type CallKind, type NodeCallTimeouts } from './call-deadline.js';

/** The most a unary answer (a list of 10,000 sandboxes is ~10 MiB) or one NDJSON line may hold: a node answering more is not buffered. */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export interface NodeEndpoint {
  /** The node's base URL, e.g. `http://10.0.0.5:8081` (what `forkd serve --role node` logs). */
  url: string;
  /** The node's token (its `<stateDir>/node.token`). */
  token: string;
  /** How long each kind of call waits for the node (default DEFAULT_NODE_CALL_TIMEOUTS). */
  timeouts?: NodeCallTimeouts | undefined;
}

export interface RequestOptions {
  json?: unknown;
  body?: Uint8Array | AsyncIterable<Uint8Array>;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
  headers?: Record<string, string>;
  /** Which deadline the call has (default `read`); see call-deadline.ts. */
  kind?: CallKind;
  /**
   * The caller's own deadline, when it must outlast the head (a stream's
   * first line, a unary answer's body): it holds the request and the
   * response, and the caller clears it. Without one, the request's own
   * deadline ends when the head arrives.
   */
  deadline?: CallDeadline;
}

/** The id of the request this call serves, for the node's log lines. */
function requestIdHeader(): Record<string, string> {
  const id = currentContext()?.requestId;
  return id ? { [NODE_REQUEST_ID_HEADER]: id } : {};
}

/**
 * Requests to one node: node:http rather than fetch, for streams that stay
 * quiet for hours (fetch's body timeout would cut them), request bodies
 * streamed as they come, and port upgrades. Failures to reach the node are
 * UNAVAILABLE, a node that does not answer within its call's deadline is
 * TIMEOUT; the node's own error answers become the ForkdError it sent.
 */
export class NodeTransport {
  readonly #base: URL;
  readonly #token: string;
  readonly #agent: http.Agent;
  readonly #mod: typeof http | typeof https;
  readonly #timeouts: NodeCallTimeouts;

  constructor({ url, token, timeouts }: NodeEndpoint) {
    this.#base = new URL(url);
    this.#token = token;
    this.#timeouts = timeouts ?? DEFAULT_NODE_CALL_TIMEOUTS;
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
      headers: { authorization: `Bearer ${this.#token}`, ...requestIdHeader(), ...headers },
      agent: this.#agent,
    };
  }

  module(): typeof http | typeof https {
    return this.#mod;
  }

  /** A deadline of `kind` for a call to `path` (not armed yet). */
  deadline(kind: CallKind, method: string, path: string): CallDeadline {
    return new CallDeadline(timeoutOf(this.#timeouts, kind), `node ${this.#base.origin} (${method} ${path})`);
  }

  /**
   * Resolves with the response once its head arrived (any status), within
   * the call's deadline: counted from the request, or, for a body streamed
   * from the caller, from its last byte (until then the socket may not stay
   * idle that long: a node that stops reading is cut too).
   */
  request(method: string, path: string, o: RequestOptions = {}): Promise<IncomingMessage> {
    const headers: Record<string, string> = { ...o.headers };
    let payload: Uint8Array | AsyncIterable<Uint8Array> | undefined = o.body;
    if (o.json !== undefined) {
      payload = Buffer.from(JSON.stringify(o.json));
      headers['content-type'] = 'application/json';
    } else if (payload !== undefined) headers['content-type'] = 'application/octet-stream';
    if (payload instanceof Uint8Array) headers['content-length'] = String(payload.byteLength);
    const streamed = payload !== undefined && !(payload instanceof Uint8Array);
    const own = o.deadline === undefined;
    const d = o.deadline ?? this.deadline(o.kind ?? 'read', method, path);
    return new Promise((resolve, reject) => {
      const opts = { ...this.options(method, path, o.query, headers), ...(o.signal ? { signal: o.signal } : {}), ...(streamed ? { timeout: d.ms } : {}) };
      const req = this.#mod.request(opts, (res) => {
        // Destroyed with TIMEOUT while whoever reads it listens; never an unhandled 'error'.
        res.on('error', () => {});
        if (own) d.clear();
        else d.hold(res);
        resolve(res);
      });
      d.hold(req);
      if (streamed) {
        req.on('timeout', () => req.destroy(d.error));
        req.on('finish', () => d.arm());
      } else d.arm();
      req.on('error', (err) => {
        if (own) d.clear();
        reject(this.unavailable(err));
      });
      if (payload === undefined) req.end();
      else if (payload instanceof Uint8Array) req.end(payload);
      // The node may answer (an error) before it read everything: the rest is not sent.
      else pipeline(Readable.from(payload), req).catch((err: unknown) => req.destroy(err as Error));
    });
  }

  /**
   * A 2xx response, or the node's error (read whole) thrown, within the
   * call's deadline; a deadline of the caller's is left running (it reads
   * on), one of the call's own is cleared.
   */
  async opened(method: string, path: string, o: RequestOptions = {}): Promise<IncomingMessage> {
    const d = o.deadline ?? this.deadline(o.kind ?? 'read', method, path);
    try {
      const res = await this.request(method, path, { ...o, deadline: d });
      if (!ok(res)) throw await this.failure(res);
      return res;
    } finally {
      if (!o.deadline) d.clear();
    }
  }

  /** A unary call: the JSON answer (undefined for 204), or the node's error thrown; the whole of it within the call's deadline. */
  async call<T>(method: string, path: string, o: RequestOptions = {}): Promise<T> {
    const d = o.deadline ?? this.deadline(o.kind ?? 'read', method, path);
    try {
      const res = await this.opened(method, path, { ...o, deadline: d });
      const text = await readText(res).catch((err: unknown) => Promise.reject(this.unavailable(err)));
      return (text ? this.#parse(text) : undefined) as T;
    } finally {
      d.clear();
    }
  }

  /** Opens an NDJSON stream: its head and first line within the call's deadline; the lines after come at the stream's pace. */
  async openLines<T>(method: string, path: string, o: RequestOptions = {}): Promise<{ res: IncomingMessage; lines: AsyncGenerator<T>; first: IteratorResult<T> }> {
    const d = this.deadline(o.kind ?? 'read', method, path);
    try {
      const res = await this.opened(method, path, { ...o, deadline: d });
      const lines = ndjsonLines<T>(res);
      const first = await lines.next().catch((err: unknown) => Promise.reject(this.unavailable(err)));
      return { res, lines, first };
    } finally {
      d.clear();
    }
  }

  #parse(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch {
      throw new ForkdError('UNAVAILABLE', `node ${this.#base.origin} answered something that is not JSON`);
    }
  }

  /** The ForkdError an error answer carries. */
  async failure(res: IncomingMessage): Promise<ForkdError> {
    // A deadline that passed while the error was read is the call's error; anything else, an unreadable answer.
    const text = await readText(res).catch((err: unknown) => (err instanceof ForkdError && err.code === 'TIMEOUT' ? Promise.reject(err) : ''));
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

function tooLarge(res: IncomingMessage): ForkdError {
  res.destroy();
  return new ForkdError('UNAVAILABLE', `a node answered more than ${MAX_ANSWER_BYTES} bytes at once`, { limitBytes: MAX_ANSWER_BYTES });
}

async function readText(res: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of res) {
    size += (c as Buffer).length;
    if (size > MAX_ANSWER_BYTES) throw tooLarge(res);
    chunks.push(c as Buffer);
  }
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
    if (rest.length > MAX_ANSWER_BYTES) throw tooLarge(res);
  }
  if (rest.trim()) yield JSON.parse(rest) as T;
}
