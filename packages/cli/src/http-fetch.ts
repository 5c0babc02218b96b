import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http';
import { Readable } from 'node:stream';
import type { FetchLike, WireRequestInit, WireResponse } from '@forkd/sdk';

/**
 * The CLI's fetch, over node:http. The global fetch (undici) and its
 * Response class cost a short-lived process 40+ ms of set-up on the first
 * request, more than the call it makes; node:http is already part of
 * Node's snapshot. It does what HttpTransport asks of a fetch: JSON, raw and
 * streamed bodies, abort, redirects (a streamed upload refuses one, like
 * fetch's `redirect: 'error'`), and no timeout on a streamed answer's body.
 */
export const httpFetch: FetchLike = (url, init) => fetchFollowing(new URL(url), init, 0);

const MAX_REDIRECTS = 20;
/** As undici: an answer's head must come within 300 s; its body may take as long as it takes. */
const HEADERS_TIMEOUT_MS = 300_000;

async function fetchFollowing(url: URL, init: WireRequestInit, hops: number): Promise<WireResponse> {
  const res = await send(url, init);
  const location = res.headers.location;
  if (![301, 302, 303, 307, 308].includes(res.statusCode ?? 0) || !location) return wireResponse(res);
  res.resume();
  if (init.redirect === 'error' || init.body instanceof ReadableStream) throw new TypeError(`redirected to ${location}, which this request cannot follow`);
  if (hops >= MAX_REDIRECTS) throw new TypeError('too many redirects');
  // fetch's rules: 303, and 301/302 after a POST, go on as a GET without the body.
  const asGet = res.statusCode === 303 || (init.method === 'POST' && (res.statusCode === 301 || res.statusCode === 302));
  const next = new URL(location, url);
  const headers = { ...init.headers };
  if (next.origin !== url.origin) delete headers.authorization;
  if (asGet) delete headers['content-type'];
  const nextInit: WireRequestInit = asGet ? { ...init, method: init.method === 'HEAD' ? 'HEAD' : 'GET', headers } : { ...init, headers };
  if (asGet) delete nextInit.body;
  return fetchFollowing(next, nextInit, hops + 1);
}

async function send(url: URL, init: WireRequestInit): Promise<IncomingMessage> {
  const request = url.protocol === 'https:' ? (await import('node:https')).request : httpRequest;
  const signal = init.signal;
  if (signal?.aborted) throw abortError();
  const headers: Record<string, string | number> = { ...init.headers };
  const body = typeof init.body === 'string' ? Buffer.from(init.body) : init.body;
  if (body instanceof Uint8Array) headers['content-length'] = body.byteLength;
  const opts: RequestOptions = { method: init.method, headers };
  return new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, opts);
    let answer: IncomingMessage | undefined;
    // Before the answer the request fails with it; after, its body does (the reader sees the AbortError).
    const onAbort = () => (answer ?? req).destroy(abortError());
    signal?.addEventListener('abort', onAbort, { once: true });
    req.setTimeout(HEADERS_TIMEOUT_MS, () => req.destroy(new TypeError('no answer within 300 s')));
    req.once('error', (err) => {
      signal?.removeEventListener('abort', onAbort);
      reject(err);
    });
    req.once('response', (res) => {
      req.setTimeout(0);
      answer = res;
      res.once('close', () => signal?.removeEventListener('abort', onAbort));
      resolve(res);
    });
    if (body instanceof ReadableStream) Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>).once('error', (err) => req.destroy(err)).pipe(req);
    else req.end(body);
  });
}

function abortError(): Error {
  const err = new Error('request aborted');
  err.name = 'AbortError';
  return err;
}

function wireResponse(res: IncomingMessage): WireResponse {
  const status = res.statusCode ?? 0;
  let used = false;
  const take = (): IncomingMessage => {
    if (used) throw new TypeError('body already used');
    used = true;
    return res;
  };
  const bytes = async (): Promise<Buffer> => {
    const chunks: Buffer[] = [];
    for await (const c of take()) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  };
  let body: ReadableStream<Uint8Array> | undefined;
  return {
    ok: status >= 200 && status < 300,
    status,
    headers: { get: (name) => headerValue(res, name) },
    get body() {
      body ??= Readable.toWeb(take()) as unknown as ReadableStream<Uint8Array>;
      return body;
    },
    json: async () => JSON.parse((await bytes()).toString('utf8')) as unknown,
    text: async () => (await bytes()).toString('utf8'),
    arrayBuffer: async () => {
      const b = await bytes();
      return b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;
    },
  };
}

function headerValue(res: IncomingMessage, name: string): string | null {
  const v = res.headers[name.toLowerCase()];
  if (v === undefined) return null;
  return Array.isArray(v) ? v.join(', ') : v;
}
