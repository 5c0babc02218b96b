import { createHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { ForkdError } from '@forkd/protocol';
import { canonicalQuery, signV4, uriEncode, type SigV4Credentials } from './s3-sigv4.js';
import { parseS3ErrorCode } from './s3-xml.js';

/** Where a bucket is: `endpoint` is scheme, host and port; `virtual` puts the bucket in the host name. */
export interface S3Endpoint {
  endpoint: URL;
  bucket: string;
  region: string;
  style: 'path' | 'virtual';
}

export interface S3Call {
  method: 'GET' | 'PUT' | 'HEAD' | 'DELETE';
  /** The object's full key in the bucket, or undefined for the bucket itself. */
  key?: string | undefined;
  query?: [string, string][];
  body?: Uint8Array;
  /** The most response body accepted, in bytes. */
  maxBody: number;
}

export interface S3Response {
  status: number;
  body: Buffer;
  /** An error document's Code, when the body is one. */
  errorCode?: string | undefined;
}

const RETRYABLE = new Set([429, 500, 502, 503, 504]);

/**
 * Signed requests to one bucket over a keep-alive agent. Network errors and
 * 429/5xx answers are retried (every S3 call forkd makes is idempotent) with
 * a growing pause, then UNAVAILABLE. Messages name the method, the key and
 * the server's error code; never a credential or a signature.
 */
export class S3Requester {
  private readonly agent: http.Agent;

  constructor(
    private readonly at: S3Endpoint,
    private readonly credentials: SigV4Credentials,
    private readonly opts: { attempts: number; idleTimeoutMs: number },
  ) {
    const secure = at.endpoint.protocol === 'https:';
    this.agent = secure ? new https.Agent({ keepAlive: true, maxSockets: 16 }) : new http.Agent({ keepAlive: true, maxSockets: 16 });
  }

  close(): void {
    this.agent.destroy();
  }

  async send(call: S3Call): Promise<S3Response> {
    for (let attempt = 1; ; attempt++) {
      let res: S3Response | undefined;
      let failure: unknown;
      try {
        res = await this.once(call);
      } catch (err) {
        if (err instanceof ForkdError) throw err;
        failure = err;
      }
      if (res && !RETRYABLE.has(res.status)) return res;
      if (attempt >= this.opts.attempts) {
        const why = res ? `HTTP ${res.status}${res.errorCode ? ` ${res.errorCode}` : ''}` : (failure as Error | undefined)?.message ?? 'failed';
        throw new ForkdError('UNAVAILABLE', `S3 ${call.method} ${call.key ?? this.at.bucket}: ${why} (after ${attempt} attempts)`, undefined, { cause: failure });
      }
      await new Promise((r) => setTimeout(r, 100 * 3 ** (attempt - 1) * (0.5 + Math.random())));
    }
  }

  private once(call: S3Call): Promise<S3Response> {
    const { endpoint, bucket } = this.at;
    const { hostname, host, path } = requestTarget(this.at, call.key);
    const body = call.body ?? new Uint8Array(0);
    const payloadHash = createHash('sha256').update(body).digest('hex');
    const headers: Record<string, string> = { 'x-amz-content-sha256': payloadHash };
    if (call.method === 'PUT') headers['content-length'] = String(body.length);
    const signed = signV4({ method: call.method, host, path, query: call.query ?? [], headers, payloadHash }, this.credentials, { region: this.at.region, service: 's3' }, new Date());
    const query = canonicalQuery(call.query ?? []);
    const lib = endpoint.protocol === 'https:' ? https : http;
    return new Promise<S3Response>((resolve, reject) => {
      const req = lib.request(
        {
          agent: this.agent,
          protocol: endpoint.protocol,
          hostname,
          port: endpoint.port || undefined,
          method: call.method,
          path: uriEncode(path, true) + (query ? `?${query}` : ''),
          headers: signed.headers,
          timeout: this.opts.idleTimeoutMs,
        },
        (res) => {
          const parts: Buffer[] = [];
          let size = 0;
          res.on('data', (d: Buffer) => {
            size += d.length;
            if (size > call.maxBody) req.destroy(new ForkdError('RESOURCE_EXHAUSTED', `S3 ${call.method} ${call.key ?? bucket}: the answer is larger than ${call.maxBody} bytes`));
            else parts.push(d);
          });
          res.on('error', reject);
          res.on('end', () => {
            const status = res.statusCode ?? 0;
            const buf = Buffer.concat(parts);
            const declared = res.headers['content-length'];
            if (call.method !== 'HEAD' && status === 200 && declared !== undefined && Number(declared) !== buf.length) {
              reject(new Error(`S3 answer cut short (${buf.length} of ${declared} bytes)`));
              return;
            }
            resolve({ status, body: buf, errorCode: status >= 300 && buf.length ? parseS3ErrorCode(buf.toString('utf8')) : undefined });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`no answer for ${this.opts.idleTimeoutMs} ms`)));
      req.on('error', reject);
      req.end(body);
    });
  }
}

/**
 * Where a request for `key` (the bucket itself when undefined) goes: the
 * host to connect to, the Host header and the path, not yet encoded.
 * Path-style: `endpoint/bucket/key`; virtual-hosted: `bucket.endpoint/key`.
 */
export function requestTarget(at: S3Endpoint, key: string | undefined): { hostname: string; host: string; path: string } {
  const { endpoint, bucket } = at;
  if (at.style === 'virtual') return { hostname: `${bucket}.${endpoint.hostname}`, host: `${bucket}.${endpoint.host}`, path: `/${key ?? ''}` };
  return { hostname: endpoint.hostname, host: endpoint.host, path: `/${bucket}${key === undefined ? '' : `/${key}`}` };
}

/** A ForkdError for an answer forkd did not expect. */
export function s3Error(method: string, key: string, res: S3Response): ForkdError {
  const what = `S3 ${method} ${key}: HTTP ${res.status}${res.errorCode ? ` ${res.errorCode}` : ''}`;
  if (res.status === 403 || res.status === 401) return new ForkdError('PERMISSION_DENIED', `${what} (check the blob store's credentials and bucket policy)`);
  if (res.errorCode === 'NoSuchBucket') return new ForkdError('FAILED_PRECONDITION', `${what} (the bucket does not exist)`);
  return new ForkdError('INTERNAL', what);
}
