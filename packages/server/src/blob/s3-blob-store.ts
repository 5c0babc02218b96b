import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from './blob-store.js';
import { assertBlobKey, assertBlobPrefix, blobKeyError } from './blob-key.js';
import { S3Requester, s3Error, type S3Endpoint } from './s3-request.js';
import type { SigV4Credentials } from './s3-sigv4.js';
import { parseListObjectsV2 } from './s3-xml.js';

export interface S3BlobStoreOptions extends S3Endpoint {
  /** Every key lives under this (empty, or ending in `/`). */
  prefix: string;
  credentials: SigV4Credentials;
  /** Tries per request before UNAVAILABLE (default 4). */
  attempts?: number;
  /** A request with no bytes moving for this long fails (and is retried; default 60 s). */
  idleTimeoutMs?: number;
  /** The largest object `get` accepts (default 1 GiB): what a misbehaving server can make forkd hold. */
  maxObjectBytes?: number;
}

const MAX_LIST_PAGE_BYTES = 16 << 20;

/**
 * A BlobStore in a bucket of any S3-compatible service (path-style or
 * virtual-hosted), signed with SigV4 (s3-sigv4.ts); ListObjectsV2 pages
 * follow continuation tokens. S3 replaces an object whole on PUT, which is
 * the store's atomicity. Keys are `<prefix><key>`.
 */
export class S3BlobStore implements BlobStore {
  private readonly http: S3Requester;
  private readonly prefix: string;
  private readonly maxObjectBytes: number;

  constructor(private readonly opts: S3BlobStoreOptions) {
    if (opts.prefix !== '' && (!opts.prefix.endsWith('/') || blobKeyError(opts.prefix.slice(0, -1)))) {
      throw new ForkdError('INVALID_ARGUMENT', 'S3 blob store: the prefix must be empty or a valid key followed by /');
    }
    this.prefix = opts.prefix;
    this.maxObjectBytes = opts.maxObjectBytes ?? 2 ** 30;
    this.http = new S3Requester(opts, opts.credentials, { attempts: opts.attempts ?? 4, idleTimeoutMs: opts.idleTimeoutMs ?? 60_000 });
  }

  describe(): string {
    const { endpoint, bucket, region, style } = this.opts;
    return `s3://${bucket}/${this.prefix} at ${endpoint.origin} (${region}, ${style}-style)`;
  }

  /** Closes idle connections. */
  close(): void {
    this.http.close();
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    assertBlobKey(key);
    const res = await this.http.send({ method: 'PUT', key: this.prefix + key, body: data, maxBody: 1 << 20 });
    if (res.status !== 200) throw s3Error('PUT', key, res);
  }

  async get(key: string): Promise<Uint8Array | undefined> {
    assertBlobKey(key);
    const res = await this.http.send({ method: 'GET', key: this.prefix + key, maxBody: this.maxObjectBytes });
    if (res.status === 404 && res.errorCode !== 'NoSuchBucket') return undefined;
    if (res.status !== 200) throw s3Error('GET', key, res);
    return new Uint8Array(res.body.buffer, res.body.byteOffset, res.body.length);
  }

  async has(key: string): Promise<boolean> {
    assertBlobKey(key);
    const res = await this.http.send({ method: 'HEAD', key: this.prefix + key, maxBody: 0 });
    if (res.status === 404) return false;
    if (res.status !== 200) throw s3Error('HEAD', key, res);
    return true;
  }

  async delete(key: string): Promise<void> {
    assertBlobKey(key);
    const res = await this.http.send({ method: 'DELETE', key: this.prefix + key, maxBody: 1 << 20 });
    if (res.status === 404 && res.errorCode !== 'NoSuchBucket') return;
    if (res.status !== 204 && res.status !== 200) throw s3Error('DELETE', key, res);
  }

  list(prefix: string): AsyncIterable<string> {
    assertBlobPrefix(prefix);
    return this.pages(prefix);
  }

  private async *pages(prefix: string): AsyncGenerator<string> {
    let token: string | undefined;
    let last = '';
    do {
      const query: [string, string][] = [['list-type', '2'], ['prefix', this.prefix + prefix]];
      if (token !== undefined) query.push(['continuation-token', token]);
      const res = await this.http.send({ method: 'GET', query, maxBody: MAX_LIST_PAGE_BYTES });
      if (res.status !== 200) throw s3Error('LIST', prefix, res);
      const page = parseListObjectsV2(res.body.toString('utf8'));
      if (!page.ok) throw new ForkdError('INTERNAL', `S3 LIST ${prefix}: unreadable answer (${page.error})`);
      for (const full of page.value.keys) {
        const key = full.slice(this.prefix.length);
        // Another writer's objects under the prefix that are not blob keys are not this store's; an answer out of order is wrong.
        if (!full.startsWith(this.prefix + prefix) || blobKeyError(key)) continue;
        if (key <= last) throw new ForkdError('INTERNAL', `S3 LIST ${prefix}: keys out of order`);
        last = key;
        yield key;
      }
      token = page.value.next;
    } while (token !== undefined);
  }
}
