import { readFile, stat } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import { ForkdError } from '@forkd/protocol';
import type { BlobStore } from './blob-store.js';
import { blobKeyError } from './blob-key.js';
import { DirBlobStore } from './dir-blob-store.js';
import { S3BlobStore } from './s3-blob-store.js';
import type { SigV4Credentials } from './s3-sigv4.js';

/** Where exports go (FORKD_BLOB_STORE), parsed; never holds a secret. */
export type BlobStoreConfig =
  | { kind: 'dir'; dir: string }
  | { kind: 's3'; bucket: string; prefix: string; endpoint: URL; region: string; style: 'path' | 'virtual' };

const S3_PARAMS = new Set(['endpoint', 'region', 'style']);
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

const bad = (msg: string) => new ForkdError('INVALID_ARGUMENT', `FORKD_BLOB_STORE: ${msg}`);

/**
 * `dir:/abs/path` (or just `/abs/path`): a directory store.
 * `s3://bucket[/prefix][?endpoint=http://host:port&region=…&style=path|virtual]`:
 * a bucket; without `endpoint`, AWS's regional endpoint, virtual-hosted;
 * with one, path-style unless `style=virtual`. Credentials never go here
 * (the string is logged): see s3Credentials.
 */
export function parseBlobStoreConfig(value: string): BlobStoreConfig {
  if (value.startsWith('dir:') || value.startsWith('/')) {
    const dir = value.startsWith('dir:') ? value.slice(4) : value;
    if (!isAbsolute(dir)) throw bad(`a directory store needs an absolute path, got ${JSON.stringify(dir)}`);
    return { kind: 'dir', dir };
  }
  if (!value.startsWith('s3://')) throw bad('expected dir:/path or s3://bucket/prefix?endpoint=…');
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw bad('not a valid s3:// URL');
  }
  if (url.username || url.password) throw bad('credentials do not go in the URL: use FORKD_S3_ACCESS_KEY_ID / FORKD_S3_SECRET_ACCESS_KEY or FORKD_S3_CREDENTIALS_FILE');
  const bucket = url.hostname;
  if (!BUCKET.test(bucket) || url.port) throw bad(`bad bucket name ${JSON.stringify(bucket)}`);
  for (const name of url.searchParams.keys()) if (!S3_PARAMS.has(name)) throw bad(`unknown parameter ${JSON.stringify(name)} (known: ${[...S3_PARAMS].join(', ')})`);
  if (url.hash) throw bad('no #fragment');
  // From the string itself: URL parsing would resolve `..` and percent-encode.
  const rest = value.slice('s3://'.length).split(/[?#]/)[0]!;
  const rawPrefix = rest.includes('/') ? rest.slice(rest.indexOf('/') + 1).replace(/\/+$/, '') : '';
  if (rawPrefix && blobKeyError(rawPrefix)) throw bad(`prefix ${JSON.stringify(rawPrefix)} ${blobKeyError(rawPrefix)}`);
  const region = url.searchParams.get('region') ?? 'us-east-1';
  if (!/^[a-z0-9-]{1,32}$/.test(region)) throw bad(`bad region ${JSON.stringify(region)}`);
  const given = url.searchParams.get('endpoint');
  const endpoint = given === null ? new URL(`https://s3.${region}.amazonaws.com`) : parseEndpoint(given);
  const style = url.searchParams.get('style') ?? (given === null ? 'virtual' : 'path');
  if (style !== 'path' && style !== 'virtual') throw bad('style must be path or virtual');
  return { kind: 's3', bucket, prefix: rawPrefix ? `${rawPrefix}/` : '', endpoint, region, style };
}

function parseEndpoint(s: string): URL {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    throw bad(`endpoint ${JSON.stringify(s)} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw bad('endpoint must be http:// or https://');
  if (u.username || u.password) throw bad('credentials do not go in the endpoint URL');
  if (u.pathname !== '/' || u.search || u.hash) throw bad('endpoint is scheme, host and port only');
  return u;
}

/**
 * S3 credentials: FORKD_S3_ACCESS_KEY_ID and FORKD_S3_SECRET_ACCESS_KEY (and
 * FORKD_S3_SESSION_TOKEN) from the environment, or the same `NAME=value`
 * lines from FORKD_S3_CREDENTIALS_FILE, which must not be readable by group
 * or others.
 */
export async function s3Credentials(env: NodeJS.ProcessEnv): Promise<SigV4Credentials> {
  let vars: Record<string, string | undefined> = env;
  const file = env.FORKD_S3_CREDENTIALS_FILE;
  if (file) {
    const st = await stat(file).catch(() => undefined);
    if (!st?.isFile()) throw new ForkdError('FAILED_PRECONDITION', `FORKD_S3_CREDENTIALS_FILE: ${file} is not a file`);
    if (st.mode & 0o077) throw new ForkdError('FAILED_PRECONDITION', `FORKD_S3_CREDENTIALS_FILE: ${file} is readable by group or others (chmod 600 it)`);
    vars = {};
    for (const line of (await readFile(file, 'utf8')).split('\n')) {
      const m = /^\s*(FORKD_S3_[A-Z_]+)\s*=\s*(.*?)\s*$/.exec(line);
      if (m) vars[m[1]!] = m[2]!;
    }
  }
  const accessKeyId = vars.FORKD_S3_ACCESS_KEY_ID;
  const secretAccessKey = vars.FORKD_S3_SECRET_ACCESS_KEY;
  if (!accessKeyId || !secretAccessKey) {
    throw new ForkdError('FAILED_PRECONDITION', `an s3:// blob store needs FORKD_S3_ACCESS_KEY_ID and FORKD_S3_SECRET_ACCESS_KEY${file ? ` in ${file}` : ' (or FORKD_S3_CREDENTIALS_FILE)'}`);
  }
  return { accessKeyId, secretAccessKey, sessionToken: vars.FORKD_S3_SESSION_TOKEN || undefined };
}

/** The store a configuration names (credentials read now, from `env`). */
export async function openBlobStore(config: BlobStoreConfig, env: NodeJS.ProcessEnv = process.env): Promise<BlobStore> {
  if (config.kind === 'dir') return DirBlobStore.open(config.dir);
  const { bucket, prefix, endpoint, region, style } = config;
  return new S3BlobStore({ bucket, prefix, endpoint, region, style, credentials: await s3Credentials(env) });
}
